"""Mininet's links and interfaces on netloom: a link is a netloom link, each interface's options
its sending direction's pipe; ``config()`` changes the pipe while the run goes on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from . import tcparams
from .log import info
from .node import Host, Node, unsupported

if TYPE_CHECKING:
    from .net import Mininet

#: The options that make a link shaped; a plain ``Link`` takes none of them, as in Mininet.
_SHAPING = {"bw", "delay", "jitter", "loss", "max_queue_size", "enable_red", "enable_ecn"}


class Intf:
    """One end of a link, named ``NODE-ethPORT`` as Mininet names it. netloom's hosts send
    through a single TUN device (``nl0``), so the name is a label: programs in the host do not see
    an interface by that name."""

    def __init__(
        self,
        name: str,
        node: Optional[Node] = None,
        port: Optional[int] = None,
        link: Optional["Link"] = None,
        mac: Optional[str] = None,
        **params: Any,
    ) -> None:
        self.name = name
        self.node = node
        self.link = link
        self.params = params
        if node is not None:
            node.addIntf(self, port=port)

    def IP(self) -> Optional[str]:  # noqa: N802
        """The host's address, the same on each of its interfaces; None on a switch."""
        return self.node.IP() if isinstance(self.node, Host) else None

    def MAC(self) -> Optional[str]:  # noqa: N802
        """None: a TUN device has no MAC address."""
        return None

    def isUp(self, setUp: bool = False) -> bool:  # noqa: N802,N803
        """Whether the link is up (``setUp=True`` brings it up first)."""
        if self.link is None:
            return False
        if setUp and not self.link.is_up:
            self.link.set_up(True)
        return self.link.is_up

    def ifconfig(self, *args: str) -> str:
        """``ifconfig('up')`` and ``ifconfig('down')`` bring the link up or down (both ways, as a
        netloom link goes down whole); anything else is refused."""
        if self.link is not None and list(args) in (["up"], ["down"]):
            self.link.set_up(args[0] == "up")
            return ""
        raise unsupported(
            f"{self.name}.ifconfig{args!r}", "the interface is a label of a netloom link"
        )

    def config(self, **params: Any) -> Dict[str, Any]:
        """Reconfigures what this end sends (Mininet's ``TCIntf.config``: ``bw``, ``delay``,
        ``jitter``, ``loss``, ``max_queue_size``, ``enable_red``, ``enable_ecn``). As in Mininet
        the call replaces the end's whole configuration: what it does not name goes back to
        unshaped. Before start it sets the options the link starts with."""
        if self.link is None:
            raise unsupported(f"{self.name}.config", "the interface has no link")
        return self.link.configure_end(self, params)

    def status(self) -> str:
        return "OK" if self.link is not None and self.link.is_up else "DOWN"

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class TCIntf(Intf):
    """Mininet's shaped interface: the same as :class:`Intf` here, where every link is shaped."""


class Link:
    """A link between two nodes. A plain ``Link`` is unshaped (10 Gbit/s, no delay, a
    1000-packet queue: what a Mininet veth pair is to netloom); :class:`TCLink` takes options."""

    def __init__(
        self,
        node1: Node,
        node2: Node,
        port1: Optional[int] = None,
        port2: Optional[int] = None,
        intfName1: Optional[str] = None,  # noqa: N803
        intfName2: Optional[str] = None,
        addr1: Any = None,
        addr2: Any = None,  # noqa: N803
        intf: Any = Intf,
        cls1: Any = None,
        cls2: Any = None,
        params1: Optional[Dict[str, Any]] = None,
        params2: Optional[Dict[str, Any]] = None,
        fast: bool = True,
        **params: Any,
    ) -> None:
        shaping = sorted(set(params) & _SHAPING)
        if shaping and type(self) is Link:
            raise tcparams.LinkOptionError(
                f"netloom.mininet: Link({node1}, {node2}) takes no {', '.join(shaping)}: as in "
                "Mininet, a link is shaped only as a TCLink (Mininet(..., link=TCLink) or "
                "addLink(..., cls=TCLink))"
            )
        if port1 is None:
            port1 = node1.newPort()
        if port2 is None:
            port2 = node2.newPort() + (1 if node1 is node2 else 0)
        self.node1, self.node2 = node1, node2
        self.intf1 = (cls1 or intf)(
            intfName1 or f"{node1.name}-eth{port1}", node=node1, port=port1, link=self
        )
        self.intf2 = (cls2 or intf)(
            intfName2 or f"{node2.name}-eth{port2}", node=node2, port=port2, link=self
        )
        # What each end sends with, in Mininet's options: intf1 sends from node1 to node2.
        self.options: Dict[Intf, Dict[str, Any]] = {
            self.intf1: {**params, **(params1 or {})},
            self.intf2: {**params, **(params2 or {})},
        }
        self.ignored: List[str] = []
        self.pipes: Dict[Intf, Dict[str, Any]] = {}
        for end in (self.intf1, self.intf2):
            self.pipes[end], ignored = tcparams.link_params(self.options[end])
            self.ignored += [k for k in ignored if k not in self.ignored]
            _say(self.options[end])
        self.is_up = True
        #: The net that runs the link (set when it is added).
        self.mn: Optional["Mininet"] = None

    def otherEnd(self, intf: Intf) -> Intf:  # noqa: N802
        """The interface at the other end from ``intf``."""
        return self.intf2 if intf is self.intf1 else self.intf1

    def direction(self, intf: Intf) -> str:
        """netloom's name of the direction ``intf`` sends in (the link named node1-node2)."""
        return "a-b" if intf is self.intf1 else "b-a"

    def table(self) -> Dict[str, Any]:
        """The link's ``[[link]]`` table for netloom's topology file."""
        forward, backward = self.pipes[self.intf1], self.pipes[self.intf2]
        table: Dict[str, Any] = {"a": self.node1.name, "b": self.node2.name, **forward}
        differ = {k: v for k, v in backward.items() if forward.get(k) != v}
        if differ:
            table["b_to_a"] = differ
        return table

    def configure_end(self, end: Intf, options: Dict[str, Any]) -> Dict[str, Any]:
        """Sets ``end``'s options (all of them, as Mininet's config does): before start for the
        run to begin with, after start through netloom's live link change."""
        pipe, ignored = tcparams.link_params(options)
        self.ignored += [k for k in ignored if k not in self.ignored]
        _say(options)
        self.options[end], self.pipes[end] = dict(options), pipe
        if self.mn is not None and self.mn.started:
            return self.mn.live.link(self.node1.name, self.node2.name).set(
                self.direction(end), **pipe
            )
        return {"set": pipe}

    def config(self, **params: Any) -> List[Dict[str, Any]]:
        """Both ends' :meth:`Intf.config` with the same options (netloom's addition)."""
        return [self.configure_end(end, params) for end in (self.intf1, self.intf2)]

    def set_up(self, up: bool) -> None:
        """Brings the link up or down (netloom routes around a link that is down)."""
        if self.mn is not None and self.mn.started:
            live = self.mn.live.link(self.node1.name, self.node2.name)
            live.up() if up else live.down()
        self.is_up = up

    def status(self) -> str:
        return f"({self.intf1.status()} {self.intf2.status()})"

    def stop(self) -> None:
        """Refused once running: netloom's links are fixed for a run (take it down instead)."""
        if self.mn is not None and self.mn.started:
            raise unsupported(
                f"deleting link {self}", "a run's links are fixed; configLinkStatus takes one down"
            )

    delete = stop

    def __str__(self) -> str:
        return f"{self.intf1}<->{self.intf2}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self}>"


class TCLink(Link):
    """A link with Mininet's traffic-control options (``bw`` in Mbit/s, ``delay``, ``jitter``,
    ``loss`` in %, ``max_queue_size`` in packets, ``enable_red``, ``enable_ecn``) on both ends;
    ``params1``/``params2`` add options for one end."""

    def __init__(
        self,
        node1: Node,
        node2: Node,
        port1: Optional[int] = None,
        port2: Optional[int] = None,
        intfName1: Optional[str] = None,  # noqa: N803
        intfName2: Optional[str] = None,
        addr1: Any = None,
        addr2: Any = None,  # noqa: N803
        **params: Any,
    ) -> None:
        params.setdefault("cls1", TCIntf)
        params.setdefault("cls2", TCIntf)
        super().__init__(node1, node2, port1, port2, intfName1, intfName2, addr1, addr2, **params)


class TCULink(TCLink):
    """Mininet's TCLink with unbuffered interfaces: the same here (netloom's queue is the
    link's ``max_queue_size``)."""


OVSLink = Link


def _say(options: Dict[str, Any]) -> None:
    """The line Mininet logs for a shaped interface: ``(10.00Mbit 5ms delay) ``."""
    parts = []
    if options.get("bw") is not None:
        parts.append(f"{float(options['bw']):.2f}Mbit")
    for key in ("delay", "jitter"):
        if options.get(key) is not None:
            parts.append(f"{options[key]} {key}")
    if options.get("loss") is not None:
        parts.append(f"{float(options['loss']):.5f}% loss")
    if options.get("enable_ecn"):
        parts.append("ECN")
    elif options.get("enable_red"):
        parts.append("RED")
    if parts:
        info("(" + " ".join(parts) + ") ")
