"""The issue's must-hold line: from a fresh venv, `pip install ./python`, then netloom.sim of the
dumbbell prints the same throughput as `netloom sim ... --json`. Installing from the source tree
builds the binary into the venv beside the package (maturin), which the package then finds with
neither PATH nor $NETLOOM naming it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, cli_json

TRAFFIC = "pattern=pairs pairs=left1:right1 source=aimd"
ONE_LINER = (
    "import netloom; r = netloom.sim('examples/dumbbell.toml', traffic='" + TRAFFIC + "', "
    "duration='5s'); print(r.flows[0].throughput_bps)"
)


def test_pip_install_in_a_fresh_venv_then_sim(binary, tmp_path):
    # maturin builds netloom with the dev profile into the target directory of the netloom under
    # test, where cargo finds it built already: the install costs no compile.
    if Path(binary).parent.name != "debug":
        pytest.skip(f"{binary} is not a debug build in a target directory for maturin to reuse")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    build_env = {
        **os.environ,
        "CARGO_TARGET_DIR": str(Path(binary).parent.parent),
        "MATURIN_PEP517_ARGS": "--profile dev",
    }
    # Only the build backend (maturin) comes from the package index; the package has no runtime
    # dependencies.
    subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(REPO / "python"),
        ],
        check=True,
        cwd=tmp_path,
        env=build_env,
    )
    # The venv not activated, no netloom on PATH, no $NETLOOM: the package finds its own.
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    env.pop("NETLOOM", None)
    env.pop("PYTHONPATH", None)
    printed = subprocess.run(
        [python, "-c", ONE_LINER + "; print(netloom.find_binary())"],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
    )
    expected = json.loads(
        cli_json(
            binary,
            "sim",
            str(REPO / "examples" / "dumbbell.toml"),
            "--traffic",
            TRAFFIC,
            "--duration",
            "5s",
            "--json",
        )
    )["flows"][0]["throughput_bps"]
    assert printed.stdout == f"{expected}\n{venv / 'bin' / 'netloom'}\n"
    # The wheel's data script, installed beside the binary and bound to the venv's interpreter.
    mn = subprocess.run(
        [str(venv / "bin" / "netloom-mn"), "--help"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    assert mn.stdout.startswith("usage: netloom-mn"), mn.stdout
    assert (venv / "bin" / "netloom-mn").read_text().startswith(f"#!{venv}/bin/python")
