"""Mininet's ``Topo``: hosts, switches and links with their options, built in ``build()``, and the
topologies scripts use most (``SingleSwitchTopo``, ``LinearTopo``, ``MinimalTopo``)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .util import irange, natural, naturalSeq


class Topo:
    """A graph of named nodes (hosts and switches) and links between them, each with options.

    Subclasses add nodes in :meth:`build`, which the constructor calls with its arguments;
    ``hopts``, ``sopts`` and ``lopts`` are the options of a host, switch or link added with
    none of its own. Links may repeat between two nodes (each gets a key)."""

    def __init__(self, *args: Any, **params: Any) -> None:
        self._nodes: Dict[str, Dict[str, Any]] = {}
        self._links: List[Tuple[str, str, int, Dict[str, Any]]] = []
        self._ports: Dict[str, Dict[int, Tuple[str, int]]] = {}
        self.hopts: Dict[str, Any] = params.pop("hopts", {})
        self.sopts: Dict[str, Any] = params.pop("sopts", {})
        self.lopts: Dict[str, Any] = params.pop("lopts", {})
        self.build(*args, **params)

    def build(self, *args: Any, **params: Any) -> None:
        """Adds the topology's nodes and links; a subclass overrides it."""

    # Nodes.

    def addNode(self, name: str, **opts: Any) -> str:  # noqa: N802
        """Adds node ``name`` with ``opts`` and returns its name."""
        self._nodes[name] = dict(opts)
        return name

    def addHost(self, name: str, **opts: Any) -> str:  # noqa: N802
        """Adds a host (``hopts`` when ``opts`` is empty) and returns its name."""
        if not opts and self.hopts:
            opts = self.hopts
        return self.addNode(name, **opts)

    def addSwitch(self, name: str, **opts: Any) -> str:  # noqa: N802
        """Adds a switch (``sopts`` when ``opts`` is empty) and returns its name."""
        if not opts and self.sopts:
            opts = self.sopts
        return self.addNode(name, isSwitch=True, **opts)

    def addPort(  # noqa: N802
        self, src: str, dst: str, sport: Optional[int] = None, dport: Optional[int] = None
    ) -> Tuple[int, int]:
        """Numbers the ports of a new link ``src``-``dst`` (switches from 1, hosts from 0, as
        Mininet's interfaces are named: ``s1-eth1``, ``h1-eth0``) unless given."""
        ports = self._ports
        if sport is None:
            sport = self._next_port(src)
        if dport is None:
            # A link from a node to itself needs two ports.
            dport = self._next_port(dst) + (1 if src == dst else 0)
        ports.setdefault(src, {})[sport] = (dst, dport)
        ports.setdefault(dst, {})[dport] = (src, sport)
        return sport, dport

    def _next_port(self, node: str) -> int:
        base = 1 if self.isSwitch(node) else 0
        used = self._ports.get(node, {})
        return max(max(used) + 1, base) if used else base

    def addLink(  # noqa: N802
        self,
        node1: str,
        node2: str,
        port1: Optional[int] = None,
        port2: Optional[int] = None,
        key: Optional[int] = None,
        **opts: Any,
    ) -> int:
        """Adds a link with options (``bw=10``, ``delay='5ms'``, ``cls=TCLink``, ...; ``lopts``
        when none) and returns its key among the links joining the same two nodes."""
        for node in (node1, node2):
            if node not in self._nodes:
                raise KeyError(f"netloom.mininet: addLink({node1!r}, {node2!r}): no node {node!r}")
        if not opts and self.lopts:
            opts = self.lopts
        port1, port2 = self.addPort(node1, node2, port1, port2)
        if key is None:
            key = sum(1 for a, b, _, _ in self._links if {a, b} == {node1, node2})
        info = dict(opts)
        info.update(node1=node1, node2=node2, port1=port1, port2=port2)
        self._links.append((node1, node2, key, info))
        return key

    # Reading.

    def nodes(self, sort: bool = True) -> List[str]:
        """Every node's name (naturally sorted: h2 before h10)."""
        names = list(self._nodes)
        return sorted(names, key=natural) if sort else names

    def isSwitch(self, n: str) -> bool:  # noqa: N802
        """Whether node ``n`` is a switch."""
        return bool(self._nodes.get(n, {}).get("isSwitch", False))

    def switches(self, sort: bool = True) -> List[str]:
        """The switches' names."""
        return [n for n in self.nodes(sort) if self.isSwitch(n)]

    def hosts(self, sort: bool = True) -> List[str]:
        """The hosts' names."""
        return [n for n in self.nodes(sort) if not self.isSwitch(n)]

    def links(
        self,
        sort: bool = False,
        withKeys: bool = False,
        withInfo: bool = False,  # noqa: N803
    ) -> List[Tuple[Any, ...]]:
        """The links as ``(node1, node2)``, with the key and/or the options dict after them;
        ``sort`` orders them by their ends' names."""
        rows = list(self._links)
        if sort:
            rows.sort(key=lambda row: naturalSeq(row[:2]))
        out: List[Tuple[Any, ...]] = []
        for a, b, key, info in rows:
            row: Tuple[Any, ...] = (a, b)
            if withKeys:
                row += (key,)
            if withInfo:
                row += (info,)
            out.append(row)
        return out

    def iterLinks(self, withKeys: bool = False, withInfo: bool = False):  # noqa: N802,N803
        """The links in the order they were added (as :meth:`links` with ``sort=False``)."""
        return iter(self.links(False, withKeys, withInfo))

    def nodeInfo(self, name: str) -> Dict[str, Any]:  # noqa: N802
        """The options node ``name`` was added with."""
        return self._nodes[name]

    def setNodeInfo(self, name: str, info: Dict[str, Any]) -> None:  # noqa: N802
        """Replaces node ``name``'s options."""
        self._nodes[name] = dict(info)

    def linkInfo(self, src: str, dst: str, key: Optional[int] = None) -> Dict[str, Any]:  # noqa: N802
        """The options of the link ``src``-``dst`` (the first such link unless ``key``)."""
        for a, b, k, info in self._links:
            if {a, b} == {src, dst} and (key is None or k == key):
                return info
        raise KeyError(f"netloom.mininet: no link {src}-{dst}")

    def port(self, src: str, dst: str) -> Tuple[int, int]:
        """The ports of the (first) link from ``src`` to ``dst``."""
        for sport, (node, dport) in sorted(self._ports.get(src, {}).items()):
            if node == dst:
                return sport, dport
        raise KeyError(f"netloom.mininet: no link {src}-{dst}")


class MinimalTopo(Topo):
    """Two hosts on one switch."""

    def build(self, *args: Any, **params: Any) -> None:
        switch = self.addSwitch("s1")
        for name in ("h1", "h2"):
            self.addLink(self.addHost(name), switch)


class SingleSwitchTopo(Topo):
    """``k`` hosts, h1 to hk, on one switch s1."""

    def build(self, k: int = 2, **_opts: Any) -> None:  # type: ignore[override]
        self.k = k
        switch = self.addSwitch("s1")
        for i in irange(1, k):
            self.addLink(self.addHost(f"h{i}"), switch)


class SingleSwitchReversedTopo(Topo):
    """As :class:`SingleSwitchTopo`, the switch's ports numbered in reverse (hk on port 1)."""

    def build(self, k: int = 2, **_opts: Any) -> None:  # type: ignore[override]
        self.k = k
        switch = self.addSwitch("s1")
        for i in irange(1, k):
            self.addLink(self.addHost(f"h{i}"), switch, port1=0, port2=k - i + 1)


class LinearTopo(Topo):
    """``k`` switches in a line, s1 to sk, each with ``n`` hosts (h1 to hk when ``n`` is 1, else
    ``hJsI``: host J of switch I)."""

    def build(self, k: int = 2, n: int = 1, **_opts: Any) -> None:  # type: ignore[override]
        self.k, self.n = k, n
        previous: Optional[str] = None
        for i in irange(1, k):
            switch = self.addSwitch(f"s{i}")
            for j in irange(1, n):
                host = self.addHost(f"h{i}" if n == 1 else f"h{j}s{i}")
                self.addLink(host, switch)
            if previous is not None:
                self.addLink(switch, previous)
            previous = switch
