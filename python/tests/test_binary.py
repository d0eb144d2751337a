"""How the package finds the netloom program: binary=, then $NETLOOM, then the one installed
beside the package (the environment's scripts directory), then PATH."""

import os
import sys
import sysconfig

import pytest

import netloom
from netloom import _binary


def test_argument_then_environment_then_beside_then_path(binary, tmp_path, monkeypatch):
    on_path = tmp_path / "bin" / "netloom"
    beside = tmp_path / "venv-bin" / "netloom"
    for link in (on_path, beside):
        link.parent.mkdir()
        link.symlink_to(binary)
    monkeypatch.delenv("NETLOOM", raising=False)
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.setattr(_binary, "scripts_dir", lambda: str(tmp_path / "empty"))
    assert netloom.find_binary() == str(on_path)
    monkeypatch.setattr(_binary, "scripts_dir", lambda: str(beside.parent))
    assert netloom.find_binary() == str(beside)
    monkeypatch.setenv("NETLOOM", binary)
    assert netloom.find_binary() == binary
    assert netloom.find_binary(on_path) == str(on_path)
    assert netloom.version(on_path) == netloom.version()


def test_scripts_dir_is_the_running_environment_s():
    # Where pip puts a wheel's scripts for this interpreter: a venv's bin when run from one.
    assert _binary.scripts_dir() == sysconfig.get_path("scripts")
    if sys.prefix != sys.base_prefix:
        assert _binary.scripts_dir() == os.path.join(sys.prefix, "bin")


def test_missing_binary_names_all_four_ways(tmp_path, monkeypatch):
    monkeypatch.delenv("NETLOOM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(_binary, "scripts_dir", lambda: str(tmp_path / "venv-bin"))
    with pytest.raises(netloom.BinaryNotFound) as err:
        netloom.sim("x.toml", "pattern=pairs")
    said = str(err.value)
    assert all(way in said for way in ("binary=", "$NETLOOM", "wheel", "venv-bin", "PATH"))
    monkeypatch.setenv("NETLOOM", os.fspath(tmp_path / "missing"))
    with pytest.raises(
        netloom.BinaryNotFound, match=r"\$NETLOOM names .*missing.*not an executable"
    ):
        netloom.find_binary()
