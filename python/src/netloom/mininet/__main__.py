"""``python -m netloom.mininet SCRIPT [ARGS]`` (or ``netloom-mn SCRIPT [ARGS]``) runs an
unmodified Mininet script on netloom; ``--topo single,3 --link tc,bw=10 --test pingall`` works
like ``mn``; ``--example NAME [ARGS]`` runs one of the Mininet-style scripts the package carries."""

from __future__ import annotations

import argparse
import os
import runpy
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from . import _alias

#: The Mininet-style example scripts installed with the package, so that a wheel's user can run
#: one without the source tree (``netloom-mn --example tclink``).
EXAMPLES = Path(__file__).resolve().with_name("examples")


def _prog() -> str:
    """The runner's name as it was typed: the installed script ``netloom-mn``, or the module."""
    typed = os.path.basename(sys.argv[0]) if sys.argv else ""
    return "netloom-mn" if typed == "netloom-mn" else "python -m netloom.mininet"


def run_script(argv: List[str]) -> None:
    """Runs ``argv[0]`` as ``__main__`` with ``argv`` as its ``sys.argv``, its ``mininet``
    imports served by netloom.mininet."""
    _alias.install()
    sys.argv = list(argv)
    runpy.run_path(argv[0], run_name="__main__")


def run_example(argv: List[str]) -> None:
    """Runs the example named ``argv[0]`` (a file of :data:`EXAMPLES` without ``.py``) as
    :func:`run_script` runs a script, with the rest of ``argv`` as its arguments."""
    names = sorted(path.stem for path in EXAMPLES.glob("*.py"))
    if not argv or argv[0] not in names:
        given = f"no example {argv[0]!r}" if argv else "--example needs a name"
        raise SystemExit(f"{_prog()}: {given}; the examples are: {', '.join(names)}")
    run_script([str(EXAMPLES / f"{argv[0]}.py"), *argv[1:]])


def _topo(spec: str) -> Any:
    from .topo import LinearTopo, MinimalTopo, SingleSwitchReversedTopo, SingleSwitchTopo
    from .topolib import TreeTopo
    from .util import splitArgs

    topos: Dict[str, Callable[..., Any]] = {
        "minimal": MinimalTopo,
        "single": SingleSwitchTopo,
        "reversed": SingleSwitchReversedTopo,
        "linear": LinearTopo,
        "tree": TreeTopo,
    }
    name, args, kwargs = splitArgs(spec)
    if name not in topos:
        raise SystemExit(f"netloom-mn: unknown topology {name!r}; use one of {', '.join(topos)}")
    return topos[name](*args, **kwargs)


def _link(spec: str) -> Any:
    from .link import Link, TCLink, TCULink
    from .util import custom, splitArgs

    links = {"default": Link, "tc": TCLink, "tcu": TCULink}
    name, _, kwargs = splitArgs(spec)
    if name not in links:
        raise SystemExit(f"netloom-mn: unknown link {name!r}; use one of {', '.join(links)}")
    return custom(links[name], **kwargs) if kwargs else links[name]


def _host(spec: str) -> Any:
    from .node import CPULimitedHost, Host
    from .util import custom, splitArgs

    hosts = {"proc": Host, "cfs": CPULimitedHost}
    name, _, kwargs = splitArgs(spec)
    if name not in hosts:
        raise SystemExit(f"netloom-mn: unknown host {name!r}; use one of {', '.join(hosts)}")
    return custom(hosts[name], **kwargs) if kwargs else hosts[name]


def run_mn(argv: List[str]) -> Optional[int]:
    """``mn``'s everyday options: build the network, run one test (or the CLI), stop."""
    parser = argparse.ArgumentParser(
        prog=_prog(),
        description=__doc__,
        epilog="--example NAME [ARGS] runs an example the package carries: "
        + ", ".join(sorted(path.stem for path in EXAMPLES.glob("*.py"))),
    )
    parser.add_argument(
        "--topo",
        default="minimal",
        help="minimal, single,K, linear,K[,N], tree,DEPTH[,FANOUT] or reversed,K",
    )
    parser.add_argument("--link", default="default", help="default or tc[,bw=..,delay=..]")
    parser.add_argument("--host", default="proc", help="proc or cfs[,cpu=F]")
    parser.add_argument("--switch", default="ovsk", help="accepted; every switch is a router")
    parser.add_argument("--controller", default="default", help="accepted; not used")
    parser.add_argument(
        "--test",
        default="cli",
        help="cli, build, pingall, pingpair, pingallfull, iperf, iperfudp or none",
    )
    parser.add_argument("-v", "--verbosity", default="info", help="log level (info, output...)")
    args = parser.parse_args(argv)

    from .cli import CLI
    from .log import setLogLevel
    from .net import Mininet

    setLogLevel(args.verbosity)
    net = Mininet(topo=_topo(args.topo), link=_link(args.link), host=_host(args.host))
    net.start()
    try:
        tests: Dict[str, Callable[[], Any]] = {
            "cli": lambda: CLI(net),
            "build": lambda: None,
            "none": lambda: None,
            "pingall": net.pingAll,
            "pingpair": net.pingPair,
            "pingallfull": net.pingAllFull,
            "iperf": net.iperf,
            "iperfudp": lambda: net.iperf(l4Type="UDP"),
        }
        if args.test not in tests:
            raise SystemExit(
                f"netloom-mn: unknown test {args.test!r}; use one of " + ", ".join(tests)
            )
        result = tests[args.test]()
    finally:
        net.stop()
    # As mn: a pingall that lost packets fails.
    return 1 if args.test.startswith("ping") and isinstance(result, float) and result else 0


def _exit_on_signal(signum: int, _frame: Any) -> None:
    # SystemExit unwinds the script (its finally blocks run) and then the exit handlers stop
    # the networks it left running; the default action would end Python without either.
    sys.exit(128 + signum)


def main(argv: Optional[List[str]] = None) -> Optional[int]:
    argv = sys.argv[1:] if argv is None else argv
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit_on_signal)
    if argv and argv[0] == "--example":
        run_example(argv[1:])
        return None
    if not argv or argv[0].startswith("-"):
        return run_mn(argv)
    run_script(argv)
    return None


if __name__ == "__main__":
    sys.exit(main())
