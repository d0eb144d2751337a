"""One version for the package and the program: the workspace's, in Cargo.toml."""

import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import REPO

import netloom


def workspace_version() -> str:
    text = (REPO / "Cargo.toml").read_text()
    table = text.split("[workspace.package]", 1)[1].split("\n[", 1)[0]
    found = re.search(r'^version = "([^"]+)"', table, re.M)
    assert found, "Cargo.toml's [workspace.package] has no version"
    return found.group(1)


def test_package_program_and_cargo_toml_agree(binary):
    assert netloom.__version__ == workspace_version()
    assert netloom.version(binary) == workspace_version()


def test_the_package_version_is_read_from_cargo_toml(tmp_path):
    # Cause it: a workspace of the same shape as this one (the CLI crate inheriting the
    # workspace's version) at another version, the real python/pyproject.toml beside it, and the
    # metadata maturin writes for that; then `netloom.__version__` in its light.
    maturin = shutil.which("maturin", path=os.path.dirname(sys.executable)) or shutil.which("maturin")
    if maturin is None:
        pytest.skip("maturin is not installed here (pip install maturin)")
    (tmp_path / "Cargo.toml").write_text(
        '[workspace]\nresolver = "2"\nmembers = ["crates/netloom-cli"]\n\n'
        '[workspace.package]\nversion = "9.8.7"\nedition = "2021"\n'
    )
    cli = tmp_path / "crates" / "netloom-cli"
    (cli / "src").mkdir(parents=True)
    (cli / "src" / "main.rs").write_text("fn main() {}\n")
    (cli / "Cargo.toml").write_text(
        '[package]\nname = "netloom"\nversion.workspace = true\nedition.workspace = true\n\n'
        '[[bin]]\nname = "netloom"\npath = "src/main.rs"\n'
    )
    shutil.copytree(REPO / "python", tmp_path / "python", ignore=shutil.ignore_patterns("tests"))
    metadata = tmp_path / "metadata"
    metadata.mkdir()
    subprocess.run(
        [maturin, "pep517", "write-dist-info", "--metadata-directory", str(metadata)],
        cwd=tmp_path / "python",
        check=True,
        capture_output=True,
        env={**os.environ, "CARGO_TARGET_DIR": str(tmp_path / "target")},
    )
    # The written metadata first on the path, the package's sources after it.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(metadata), str(REPO / "python" / "src")])}
    printed = subprocess.run(
        [sys.executable, "-c", "import netloom; print(netloom.__version__)"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    assert printed == "9.8.7\n"
