"""What the package's tests share: the repository's paths, the netloom program (skip when it
cannot be found), a private registry directory, and the check that live runs can work here."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import netloom
from netloom.pytest_plugin import live_unavailable

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
DUMBBELL = REPO / "examples" / "dumbbell.toml"


@pytest.fixture(scope="session")
def binary() -> str:
    try:
        return netloom.find_binary()
    except netloom.BinaryNotFound as err:
        pytest.skip(str(err))


def cli_json(binary: str, *args: str) -> str:
    """What `netloom ARGS` prints on standard output (it must succeed)."""
    return subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def live(binary, monkeypatch):
    """For a live test: skips where live runs cannot work; points netloom (and the package) at a
    registry directory of the test's own, so nothing here touches other experiments. (A short
    path: a control socket's must fit in 108 bytes.)"""
    why = live_unavailable()
    if why:
        pytest.skip(why)
    registry = Path(tempfile.mkdtemp(prefix="nlpy"))
    monkeypatch.setenv("NETLOOM_RUN_DIR", str(registry))
    yield registry
    shutil.rmtree(registry, ignore_errors=True)


def leftovers(registry: Path, name: str) -> list:
    """What an experiment left behind: its namespaces, registry entries and log."""
    found = (
        [p.name for p in Path("/run/netns").glob(f"nl-{name}-*")]
        if Path("/run/netns").exists()
        else []
    )
    found += [p.name for p in registry.glob(f"{name}*")]
    return found


def lab_topology(name: str = "lab") -> netloom.Topology:
    """h1 - r1 - r2 - h2, 1 ms access links and a 5 ms link between the routers."""
    t = netloom.Topology(name, defaults={"bw": "100Mbit", "delay": "1ms"})
    for host in ("h1", "h2"):
        t.add_host(host)
    t.add_router("r1")
    t.add_router("r2")
    t.add_link("h1", "r1")
    t.add_link("r1", "r2", delay="5ms")
    t.add_link("r2", "h2")
    return t


def pytest_report_header(config):
    return f"netloom binary: {os.environ.get('NETLOOM') or 'from PATH'}"
