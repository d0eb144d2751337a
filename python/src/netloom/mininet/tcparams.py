"""Mininet's link options (``TCLink``/``TCIntf.config``) turned into netloom's link parameters."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ..errors import NetloomError

#: The queue a link gets when the script names none: Linux's ``txqueuelen`` and netem's default
#: ``limit``, which is what a Mininet link queues at (netloom's own default is the bandwidth-delay
#: product, much smaller; a script measured under Mininet would see other queueing delays).
DEFAULT_QUEUE_PACKETS = 1000

#: The rate of a link with no ``bw``: Mininet leaves such a link unshaped, netloom needs a rate;
#: 10 Gbit/s is above what the engine forwards on one host, so the link does not limit.
UNSHAPED_BW = "10Gbit"

#: Mininet's RED (``enable_red``/``enable_ecn``): ``min 30000 max 35000 avpkt 1500 probability 1``,
#: in bytes; netloom's thresholds are in the queue's unit, packets here, so 30000/1500 and
#: 35000/1500 rounded.
RED_MIN_PACKETS = 20
RED_MAX_PACKETS = 23

#: Options Mininet takes that choose how Linux shapes (HTB, HFSC or TBF, burst sizes, offloads):
#: netloom's pipe is one exact shaper whatever the choice, so they change nothing here.
IGNORED = {
    "use_htb": "netloom's pipes shape exactly, with no choice of Linux qdisc",
    "use_hfsc": "netloom's pipes shape exactly, with no choice of Linux qdisc",
    "use_tbf": "netloom's pipes shape exactly, with no choice of Linux qdisc",
    "latency_ms": "it is TBF's parameter and netloom does not use TBF",
    "speedup": "it is an experimental switch-side bw option of Mininet's",
    "gro": "netloom's hosts see a TUN device, where offloads are netloom's own",
    "txo": "netloom's hosts see a TUN device, where offloads are netloom's own",
    "rxo": "netloom's hosts see a TUN device, where offloads are netloom's own",
    "disable_gro": "netloom's hosts see a TUN device, where offloads are netloom's own",
}

#: Options of a link that are not link parameters (interface names, ports, addresses).
STRUCTURAL = {"port1", "port2", "intfName1", "intfName2", "addr1", "addr2", "cls", "key"}

_TIME = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(us|usec|usecs|ms|msec|msecs|s|sec|secs)?\s*$")
_TIME_NS = {
    "us": 1_000,
    "usec": 1_000,
    "usecs": 1_000,
    "ms": 1_000_000,
    "msec": 1_000_000,
    "msecs": 1_000_000,
    "s": 1_000_000_000,
    "sec": 1_000_000_000,
    "secs": 1_000_000_000,
}


class LinkOptionError(NetloomError, ValueError):
    """A link option netloom cannot apply as Mininet would (a ``ValueError`` too, as a bad
    argument is in Python)."""


def duration(name: str, value: Any) -> str:
    """A Mininet/netem time (``'5ms'``, ``'100us'``, ``'1s'``; a bare number is microseconds,
    as in ``tc``) as netloom's duration string, exact in nanoseconds."""
    if isinstance(value, bool):
        raise LinkOptionError(f"netloom.mininet: {name}={value!r} is not a time; write e.g. '5ms'")
    if isinstance(value, (int, float)):
        value = f"{value}us"
    match = _TIME.match(str(value))
    if not match:
        raise LinkOptionError(
            f"netloom.mininet: {name}={value!r} is not a time; write e.g. '5ms', '100us' or '1s'"
        )
    number, unit = match.groups()
    scale = _TIME_NS[unit or "us"]
    ns = round(float(number) * scale)
    if ns == 0:
        return "0"
    for suffix, per in (("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)):
        if ns % per == 0:
            return f"{ns // per}{suffix}"
    return f"{ns}ns"


def rate(bw: Any) -> str:
    """Mininet's ``bw`` (megabits per second, a number) as netloom's rate string."""
    if isinstance(bw, bool) or not isinstance(bw, (int, float)):
        raise LinkOptionError(
            f"netloom.mininet: bw={bw!r}: Mininet's bw is a number of Mbit/s, e.g. bw=10"
        )
    if not bw > 0:
        raise LinkOptionError(
            f"netloom.mininet: bw={bw!r}: a link's rate must be above 0 Mbit/s "
            "(to take a link down, use configLinkStatus or 'link A B down')"
        )
    kbit = round(bw * 1000)
    if abs(kbit - bw * 1000) > 1e-6 * max(1.0, bw * 1000):
        return f"{round(bw * 1_000_000)}bit"
    return f"{kbit // 1000}Mbit" if kbit % 1000 == 0 else f"{kbit}kbit"


def loss(value: Any) -> str:
    """Mininet's ``loss`` (a percentage, 0 to 100) as netloom's probability string."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise LinkOptionError(
            f"netloom.mininet: loss={value!r}: Mininet's loss is a percentage number, e.g. loss=1"
        )
    if not 0 <= value <= 100:
        raise LinkOptionError(f"netloom.mininet: loss={value!r} is not a percentage in 0..100")
    return f"{value:g}%"


def link_params(options: Dict[str, Any], *, full: bool = True) -> Tuple[Dict[str, Any], List[str]]:
    """netloom's parameters for one direction of a link configured with Mininet's ``options``,
    and the names of the options accepted but ignored (:data:`IGNORED`).

    ``full`` gives every parameter a value, as a Mininet link (or a ``config()`` call, which
    replaces an interface's whole ``tc`` setup) ends up with: no ``bw`` means unshaped, no
    ``max_queue_size`` a 1000-packet queue. An option netloom has no counterpart for raises
    :class:`LinkOptionError` naming it, rather than be dropped silently."""
    params: Dict[str, Any] = {}
    ignored: List[str] = []
    bw: Optional[Any] = options.get("bw")
    for key, value in options.items():
        if key in IGNORED:
            if value not in (None, False, 0):
                ignored.append(key)
        elif (
            key
            not in ("bw", "delay", "jitter", "loss", "max_queue_size", "enable_red", "enable_ecn")
            and key not in STRUCTURAL
        ):
            raise LinkOptionError(
                f"netloom.mininet: link option {key}={value!r} has no netloom counterpart; "
                "netloom links take bw, delay, jitter, loss, max_queue_size, enable_red and "
                "enable_ecn (docs/mininet.md)"
            )
    if bw is not None:
        params["bw"] = rate(bw)
    elif full:
        params["bw"] = UNSHAPED_BW
    delay = options.get("delay")
    if delay is not None:
        params["delay"] = duration("delay", delay)
    elif full:
        params["delay"] = "0"
    jitter = options.get("jitter")
    if jitter is not None:
        params["jitter"] = duration("jitter", jitter)
        # netem gives each packet its own delay and sends them in time order, so under jitter a
        # packet overtakes the one before it; netloom keeps the order unless told to reorder.
        params["reorder"] = params["jitter"] != "0"
    elif full:
        params["jitter"] = "0"
        params["reorder"] = False
    lost = options.get("loss")
    if lost is not None:
        params["loss"] = loss(lost)
    elif full:
        params["loss"] = "0%"
    queue = options.get("max_queue_size")
    if queue is not None:
        if isinstance(queue, bool) or not isinstance(queue, int) or queue < 1:
            raise LinkOptionError(
                f"netloom.mininet: max_queue_size={queue!r} must be a whole number of packets, "
                "at least 1"
            )
        params["queue"] = queue
    elif full:
        params["queue"] = DEFAULT_QUEUE_PACKETS
    red, ecn = bool(options.get("enable_red")), bool(options.get("enable_ecn"))
    if (red or ecn) and bw is not None:
        # Mininet adds RED only under a bw limit (it is a child of the HTB/TBF class).
        params["aqm"] = "red"
        params["red"] = {"min_th": RED_MIN_PACKETS, "max_th": RED_MAX_PACKETS, "max_p": "100%"}
        params["ecn"] = ecn
    elif full:
        params["aqm"] = "droptail"
        params["ecn"] = False
    return params, ignored
