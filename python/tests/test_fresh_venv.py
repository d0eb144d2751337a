"""The issue's must-hold line: from a fresh venv, `pip install ./python`, then netloom.sim of the
dumbbell prints the same throughput as `netloom sim ... --json`."""

import json
import os
import subprocess
import sys

from conftest import REPO, cli_json

TRAFFIC = "pattern=pairs pairs=left1:right1 source=aimd"
ONE_LINER = (
    "import netloom; r = netloom.sim('examples/dumbbell.toml', traffic='" + TRAFFIC + "', "
    "duration='5s'); print(r.flows[0].throughput_bps)"
)


def test_pip_install_in_a_fresh_venv_then_sim(binary, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    # Only the build backend (setuptools) comes from the package index; the package has no
    # runtime dependencies.
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
    )
    env = {**os.environ, "PATH": f"{os.path.dirname(binary)}{os.pathsep}{os.environ['PATH']}"}
    env.pop("NETLOOM", None)  # found on PATH, as a user's would be
    env.pop("PYTHONPATH", None)
    printed = subprocess.run(
        [python, "-c", ONE_LINER], check=True, capture_output=True, text=True, cwd=REPO, env=env
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
    assert printed.stdout == f"{expected}\n"
