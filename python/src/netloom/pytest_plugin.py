"""The pytest plugin (entry point ``netloom``): fixtures that bring a topology up live for one test
and tear it down after it, passed, failed or raised.

- ``netloom_run``: a factory, ``net = netloom_run(topology, **run_options)``; every run it started
  is stopped when the test ends.
- ``netloom_net``: the run of the test's marker, ``@pytest.mark.netloom(topology=..., **options)``.

A test that uses either is skipped, with the reason, where live runs cannot work (not root, no
``/dev/net/tun``, no ``ip``). ``--netloom-binary PATH`` names the program (else ``$NETLOOM``, else
``PATH``).
"""

from __future__ import annotations

import os
import shutil
from typing import Any, Callable, Iterator, List, Optional

import pytest

from .errors import NetloomError
from .live import Net, run, unique_name


def live_unavailable() -> Optional[str]:
    """Why live runs cannot work on this machine, or ``None`` when they can."""
    if os.geteuid() != 0:
        return "netloom live runs need root"
    if not os.path.exists("/dev/net/tun"):
        return "netloom live runs need /dev/net/tun"
    if not any(os.path.exists(p) for p in ("/usr/sbin/ip", "/sbin/ip")) and not shutil.which("ip"):
        return "netloom live runs need iproute2's ip"
    return None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("netloom")
    group.addoption(
        "--netloom-binary",
        default=None,
        help="the netloom program for the netloom fixtures (default: $NETLOOM, then PATH)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "netloom(topology, **options): the topology (a file or a netloom.Topology) and run "
        "options of the netloom_net fixture",
    )


@pytest.fixture
def netloom_run(request: pytest.FixtureRequest) -> Iterator[Callable[..., Net]]:
    """A factory that starts live runs for this test (``netloom.run``'s arguments) and stops
    every one of them when the test ends, whatever its outcome."""
    why = live_unavailable()
    if why:
        pytest.skip(why)
    binary = request.config.getoption("--netloom-binary")
    started: List[Net] = []

    def start(topology: Any, **options: Any) -> Net:
        options.setdefault("binary", binary)
        options.setdefault("name", unique_name(f"pt-{request.node.name}"))
        net = run(topology, **options)
        started.append(net)
        return net

    yield start
    errors = []
    for net in reversed(started):
        try:
            net.stop()
        except NetloomError as err:
            errors.append(str(err))
    if errors:
        # A run that died during the test is worth failing the test's teardown for.
        pytest.fail("\n".join(errors), pytrace=False)


@pytest.fixture
def netloom_net(request: pytest.FixtureRequest, netloom_run: Callable[..., Net]) -> Net:
    """The live run of the test's ``@pytest.mark.netloom(topology=..., **options)`` marker."""
    marker = request.node.get_closest_marker("netloom")
    if marker is None:
        raise pytest.UsageError(
            "netloom_net needs a marker: @pytest.mark.netloom(topology='topo.toml', ...)"
        )
    options = dict(marker.kwargs)
    topology = options.pop("topology", marker.args[0] if marker.args else None)
    if topology is None:
        raise pytest.UsageError(
            "@pytest.mark.netloom needs topology= (a file or a netloom.Topology)"
        )
    return netloom_run(topology, **options)
