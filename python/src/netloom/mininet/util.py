"""Mininet's helpers scripts import from ``mininet.util``: ``irange``, ``custom``, ``quietRun``,
``dumpNodeConnections``, natural sorting, iperf-style rates."""

from __future__ import annotations

import functools
import re
import subprocess
import time
from typing import Any, Dict, Iterable, List, Sequence, Tuple, Union

from .log import output


def irange(start: int, end: int) -> range:
    """The integers from ``start`` to ``end``, both included (Mininet numbers hosts from 1)."""
    return range(start, end + 1)


def natural(text: Any) -> List[Union[int, str]]:
    """A key sorting ``h2`` before ``h10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(text))]


def naturalSeq(items: Iterable[Any]) -> List[List[Union[int, str]]]:  # noqa: N802
    """:func:`natural` of each item, for sorting tuples."""
    return [natural(item) for item in items]


class custom:  # noqa: N801 (Mininet's name; a class so that the net can read its parameters)
    """``custom(TCLink, bw=10)``: a constructor of ``cls`` with these parameters set, which the
    net also reads (``cls`` and ``params``) to know what kind of host or link it stands for."""

    def __init__(self, cls: Any, **params: Any) -> None:
        self.cls = cls
        self.params = params

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        merged = dict(kwargs)
        merged.update(self.params)
        return self.cls(*args, **merged)

    def __repr__(self) -> str:
        return f"custom({getattr(self.cls, '__name__', self.cls)}, {self.params!r})"


def unwrap(factory: Any) -> Tuple[Any, Dict[str, Any]]:
    """The class a constructor stands for and the parameters it adds: a class as it is, a
    :class:`custom` or a ``functools.partial`` of one (nested ones merged, inner first)."""
    params: Dict[str, Any] = {}
    layers: List[Dict[str, Any]] = []
    while True:
        if isinstance(factory, custom):
            layers.append(factory.params)
            factory = factory.cls
        elif isinstance(factory, functools.partial):
            if factory.args:
                raise TypeError(
                    f"netloom.mininet: {factory!r} passes positional arguments; give keywords"
                )
            layers.append(dict(factory.keywords))
            factory = factory.func
        else:
            break
    for layer in reversed(layers):
        params.update(layer)
    return factory, params


def _run(cmd: Union[str, Sequence[str]], **kwargs: Any) -> "subprocess.CompletedProcess[str]":
    args = ["sh", "-c", cmd] if isinstance(cmd, str) else [str(c) for c in cmd]
    return subprocess.run(
        args, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False, **kwargs
    )


def quietRun(cmd: Union[str, Sequence[str]], **kwargs: Any) -> str:  # noqa: N802
    """Runs ``cmd`` on the machine itself (not in a host) and returns its output, standard
    output then standard error."""
    done = _run(cmd, **kwargs)
    return done.stdout + done.stderr


def errRun(cmd: Union[str, Sequence[str]], **kwargs: Any) -> Tuple[str, str, int]:  # noqa: N802
    """Runs ``cmd`` on the machine and returns ``(stdout, stderr, exit code)``."""
    done = _run(cmd, **kwargs)
    return done.stdout, done.stderr, done.returncode


def dumpNodeConnections(nodes: Iterable[Any]) -> None:  # noqa: N802
    """Prints each node's interfaces and what they connect to, as Mininet does:
    ``h1 h1-eth0:s1-eth1``."""
    for node in nodes:
        output(node.name)
        for intf in node.intfList():
            output(f" {intf}:")
            other = intf.link.otherEnd(intf) if intf.link else None
            output(str(other) if other is not None else " ")
        output("\n")


def dumpNetConnections(net: Any) -> None:  # noqa: N802
    """:func:`dumpNodeConnections` of every switch, host and controller of ``net``."""
    dumpNodeConnections(net.switches + net.hosts + net.controllers)


_SCALES = ["", "K", "M", "G", "T", "P"]


def fmtBps(bps: Any, prefix: str = "", fmt: str = "%.1f %sbits/sec") -> str:  # noqa: N802
    """A rate in bit/s written as iperf writes it (``'9.6 Mbits/sec'``)."""
    value = float(bps)
    index = _SCALES.index(prefix.upper()) if prefix else 0
    if not prefix:
        while value >= 1000 and index < len(_SCALES) - 1:
            value /= 1000
            index += 1
    else:
        value /= 1000**index
    return fmt % (value, _SCALES[index])


def makeNumeric(text: Any) -> Union[int, float, str]:  # noqa: N802
    """``'10'`` as 10, ``'1.5'`` as 1.5, anything else as it was."""
    for kind in (int, float):
        try:
            return kind(text)
        except (TypeError, ValueError):
            pass
    return str(text)


def waitListening(  # noqa: N802
    client: Any = None, server: Any = "127.0.0.1", port: int = 80, timeout: float = 10
) -> bool:
    """Waits until something listens on ``server``'s TCP ``port`` (as seen from ``client``, a
    host); False after ``timeout`` seconds."""
    ip = server.IP() if hasattr(server, "IP") else str(server)
    deadline = time.monotonic() + timeout
    probe = f"exec 3<>/dev/tcp/{ip}/{int(port)}"
    while time.monotonic() < deadline:
        if client is not None:
            if client.pexec(["bash", "-c", probe])[2] == 0:
                return True
        elif _run(["bash", "-c", probe]).returncode == 0:
            return True
        time.sleep(0.1)
    return False


def splitArgs(argstr: str) -> Tuple[str, List[Any], Dict[str, Any]]:  # noqa: N802
    """``'tc,bw=10,delay=5ms'`` as ``('tc', [], {'bw': 10, 'delay': '5ms'})``, as ``mn``'s
    options are written."""
    parts = argstr.split(",")
    args: List[Any] = []
    kwargs: Dict[str, Any] = {}
    for part in parts[1:]:
        if "=" in part:
            key, value = part.split("=", 1)
            kwargs[key] = makeNumeric(value)
        else:
            args.append(makeNumeric(part))
    return parts[0], args, kwargs


__all__: List[str] = [
    "custom",
    "dumpNetConnections",
    "dumpNodeConnections",
    "errRun",
    "fmtBps",
    "irange",
    "makeNumeric",
    "natural",
    "naturalSeq",
    "quietRun",
    "splitArgs",
    "waitListening",
]
