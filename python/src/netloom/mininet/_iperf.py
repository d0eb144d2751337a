"""``net.iperf``'s measurement: iperf (version 2) between two hosts when it is installed, as
Mininet runs it, else iperf3; the server's and the client's rates in bit/s."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import time
from typing import Any, Dict, List, Optional, Tuple

from ..errors import NetloomError, RunError
from .log import debug

#: A rate in iperf 2's report lines (``9.57 Mbits/sec``), and what its prefixes multiply by
#: (iperf 2 counts bits in thousands, bytes in 1024s).
_RATE = re.compile(r"([\d.]+) ([KMGT]?)bits/sec")
_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _which(name: str) -> Optional[str]:
    """``name`` on PATH (a seam for tests that hide one of the two programs)."""
    return shutil.which(name)


def iperf2() -> Optional[str]:
    """The ``iperf`` on PATH if it is iperf 2 (some systems name iperf3 ``iperf``)."""
    program = _which("iperf")
    if program is None:
        return None
    # iperf 2 prints its version on standard error and exits 1.
    done = subprocess.run([program, "-v"], capture_output=True, text=True, timeout=10)
    return program if "iperf version 2" in done.stdout + done.stderr else None


def measure(
    client: Any,
    server: Any,
    l4Type: str,  # noqa: N803
    udpBw: str,  # noqa: N803
    seconds: int,
    port: int,
) -> Tuple[float, float]:
    """Runs a server in ``server`` and a client in ``client`` for ``seconds``; returns
    ``(received, sent)``: the server's rate and the client's, in bit/s."""
    if l4Type not in ("TCP", "UDP"):
        raise NetloomError(f"netloom.mininet: net.iperf's l4Type is 'TCP' or 'UDP', not {l4Type!r}")
    program = iperf2()
    if program is not None:
        return _measure2(program, client, server, l4Type, udpBw, seconds, port)
    program = _which("iperf3")
    if program is not None:
        return _measure3(program, client, server, l4Type, udpBw, seconds, port)
    raise NetloomError(
        "netloom.mininet: net.iperf runs iperf (version 2, as Mininet does) or iperf3, and "
        "neither is installed (apt-get install iperf)"
    )


def _measure2(
    program: str,
    client: Any,
    server: Any,
    l4Type: str,  # noqa: N803
    udpBw: str,  # noqa: N803
    seconds: int,
    port: int,
) -> Tuple[float, float]:
    udp = ["-u"] if l4Type == "UDP" else []
    # Its errors (a port in use) in the same pipe, to be quoted if it ends.
    listener = server.popen(
        [program, "-s", "-p", str(port), *udp], bufsize=0, stderr=subprocess.STDOUT
    )
    try:
        seen = _read_until(listener, server.name, lambda text: "listening" in text.lower())
        args = [program, "-c", str(server.IP()), "-p", str(port), "-t", str(seconds), *udp]
        if udp:
            args += ["-b", udpBw]
        out, err, _ = client.pexec(args)
        debug("iperf client output:", out, err)
        # iperf 2 exits 0 when it could not connect: its report line is what tells.
        sent = _rates(out)
        if not sent:
            raise RunError(
                f"netloom.mininet: iperf from {client} to {server} failed: "
                f"{err.strip() or out.strip()}"
            )
        # The server reports once the client's connection (or datagrams) ended.
        seen = _read_until(listener, server.name, lambda text: bool(_rates(text)), seen)
    finally:
        listener.kill()
        listener.communicate()
    debug("iperf server output:", seen)
    return _rates(seen)[-1], sent[0]


def _rates(text: str) -> List[float]:
    """The rates of iperf 2's report lines in ``text``, in bit/s, in order."""
    return [float(value) * _SCALE[prefix] for value, prefix in _RATE.findall(text)]


def _measure3(
    program: str,
    client: Any,
    server: Any,
    l4Type: str,  # noqa: N803
    udpBw: str,  # noqa: N803
    seconds: int,
    port: int,
) -> Tuple[float, float]:
    listener = server.popen(
        [program, "-s", "-1", "--forceflush", "-p", str(port)],
        bufsize=0,
        stderr=subprocess.STDOUT,
    )
    try:
        _read_until(listener, server.name, lambda text: "listening" in text.lower())
        args = [program, "-c", str(server.IP()), "-p", str(port), "-t", str(seconds), "-J"]
        if l4Type == "UDP":
            args += ["-u", "-b", udpBw]
        out, err, code = client.pexec(args)
        debug("iperf3 client output:", out, err)
        try:
            report = json.loads(out)
        except ValueError:
            report = {}
        if code != 0 or "end" not in report:
            raise RunError(
                f"netloom.mininet: iperf3 from {client} to {server} failed: "
                f"{report.get('error') or err.strip() or out.strip()}"
            )
    finally:
        listener.kill()
        listener.communicate()
    sent, received = _rates3(report["end"], l4Type)
    return received, sent


def _read_until(
    listener: "subprocess.Popen[bytes]", host: str, done: Any, seen: str = "", timeout: float = 10
) -> str:
    """Reads the server's output until ``done(all of it)`` holds, and returns all of it. Read
    from the descriptor itself: a buffered reader could hold a line where ``select`` does not
    see it. (Waiting for iperf's ``Server listening`` line rather than probing the port: a probe
    connection would be taken for a client.)"""
    assert listener.stdout is not None
    fd = listener.stdout.fileno()
    deadline = time.monotonic() + timeout
    while not done(seen):
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(left, 0))
        chunk = os.read(fd, 4096) if ready else b""
        if not chunk:
            raise RunError(
                f"netloom.mininet: the iperf server in {host} "
                + ("ended" if ready else f"said nothing more within {timeout:g} s")
                + (f": {seen.strip()}" if seen.strip() else "")
            )
        seen += chunk.decode(errors="replace")
    return seen


def _rates3(end: Dict[str, Any], l4Type: str) -> Tuple[float, float]:  # noqa: N803
    """``(sent, received)`` bit/s from iperf3's ``end`` report."""
    if l4Type == "UDP":
        total = end.get("sum", {})
        sent = float(total.get("bits_per_second", 0))
        received = end.get("sum_received", {}).get("bits_per_second")
        if received is None:
            received = sent * (1 - float(total.get("lost_percent", 0)) / 100)
        return sent, float(received)
    return (
        float(end["sum_sent"]["bits_per_second"]),
        float(end["sum_received"]["bits_per_second"]),
    )
