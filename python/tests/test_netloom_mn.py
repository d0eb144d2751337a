"""The `netloom-mn` script the package installs (python/wheel-data/scripts): pip put it in this
environment's bin with its `#!python` line made this environment's interpreter, it speaks `mn`'s
options, and as root it builds a network and pings across it as `mn` does. scripts/test runs
these against its editable install; scripts/package-check does the same from the wheel."""

import importlib.metadata
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest


def installed_netloom_mn() -> Path:
    """The installed script: it must be there whenever the package is installed (editable or
    not); skips only when the tests run against sources that were never installed."""
    try:
        importlib.metadata.distribution("netloom")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the netloom package is not installed here (pip install -e ./python)")
    script = Path(sysconfig.get_path("scripts")) / "netloom-mn"
    assert script.is_file() and os.access(script, os.X_OK), (
        f"installing netloom put no executable netloom-mn in {script.parent}; "
        "reinstall it (pip install -e ./python)"
    )
    return script


def without_sources(env=None):
    """The environment of a user's shell: no PYTHONPATH pointing into the repository, so the
    script imports the installed package."""
    env = dict(os.environ if env is None else env)
    env.pop("PYTHONPATH", None)
    return env


def test_netloom_mn_is_installed_with_this_environment_s_interpreter():
    script = installed_netloom_mn()
    first = script.read_text().splitlines()[0]
    # pip rewrites `#!python` to the interpreter it installs for: this venv's.
    assert first.startswith("#!") and first != "#!python", first
    assert Path(first[2:].strip()).parent == Path(sys.executable).parent, first


def test_netloom_mn_speaks_mn_s_options():
    script = installed_netloom_mn()
    done = subprocess.run(
        [str(script), "--help"], capture_output=True, text=True, timeout=60, env=without_sources()
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: netloom-mn"), done.stdout
    for option in ("--topo", "--link", "--test", "--example NAME"):
        assert option in done.stdout, done.stdout


@pytest.mark.live
def test_netloom_mn_pings_across_a_shaped_single_switch_network(live):
    script = installed_netloom_mn()
    done = subprocess.run(
        [str(script), "--topo", "single,3", "--link", "tc,bw=10,delay=5ms", "--test", "pingall"],
        capture_output=True,
        text=True,
        timeout=180,
        env=without_sources(),
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert "(10.00Mbit 5ms delay)" in log, log
    assert "*** Results: 0% dropped (6/6 received)" in log, log
