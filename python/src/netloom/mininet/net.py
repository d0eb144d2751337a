"""Mininet's ``Mininet`` on netloom: nodes and links are gathered as a script adds them, become a
netloom topology at ``start()`` and run as one live experiment; ``stop()`` (or the end of the
script) tears it all down."""

from __future__ import annotations

import atexit
import ipaddress
import re
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

from .. import live as _live
from ..errors import NetloomError
from ..topology import Topology
from . import _iperf
from .link import Intf, Link
from .log import error, info, output
from .node import Controller, DefaultController, Host, Node, OVSKernelSwitch
from .node import Switch, unsupported
from .topo import Topo
from .tcparams import IGNORED
from .util import fmtBps, unwrap

NodeRef = Union[str, Node]

#: Nets started and not yet stopped, stopped when the interpreter exits: a script that raises
#: midway (or forgets ``net.stop()``) leaves no namespaces behind, which Mininet needs
#: ``mn -c`` for. Strong references: a running net the script no longer holds must still be
#: found at exit.
_RUNNING: "Set[Mininet]" = set()


@atexit.register
def _stop_all() -> None:
    for net in list(_RUNNING):
        try:
            net.stop()
        except Exception as err:  # noqa: BLE001 (at exit: report and go on with the others)
            error(f"*** netloom.mininet: stopping {net.experiment} at exit: {err}\n")


class Mininet:
    """A network of hosts, switches and links, run by netloom. The keywords are Mininet's; those
    netloom has no use for are accepted (see docs/mininet.md), and ``binary`` and
    ``run_options`` (keywords of :func:`netloom.run`, such as ``precision="busy"``) are
    netloom's own."""

    def __init__(
        self,
        topo: Optional[Topo] = None,
        switch: Any = OVSKernelSwitch,
        host: Any = Host,
        controller: Any = DefaultController,
        link: Any = Link,
        intf: Any = Intf,
        build: bool = True,
        xterms: bool = False,
        cleanup: bool = False,
        ipBase: str = "10.0.0.0/8",  # noqa: N803
        inNamespace: bool = False,
        autoSetMacs: bool = False,  # noqa: N803
        autoStaticArp: bool = False,
        autoPinCpus: bool = False,  # noqa: N803
        listenPort: Optional[int] = None,
        waitConnected: bool = False,  # noqa: N803
        *,
        binary: Optional[str] = None,
        run_options: Optional[Dict[str, Any]] = None,
    ) -> None:
        if xterms:
            raise unsupported("Mininet(xterms=True)", "netloom opens no terminal windows")
        if autoPinCpus:
            raise unsupported("Mininet(autoPinCpus=True)", "netloom does not pin hosts to CPUs")
        self.topo = topo
        self.switch, self.host, self.controller, self.link, self.intf = (
            switch,
            host,
            controller,
            link,
            intf,
        )
        self.ipBase = ipBase
        try:
            # Mininet numbers hosts inside ipBase's network, whatever bits past its prefix say.
            self._network = ipaddress.IPv4Network(ipBase, strict=False)
        except ValueError as err:
            raise NetloomError(f"netloom.mininet: ipBase={ipBase!r}: {err}") from err
        self.waitConn = waitConnected
        self.binary = binary
        self.run_options = dict(run_options or {})
        self.hosts: List[Host] = []
        self.switches: List[Switch] = []
        self.controllers: List[Controller] = []
        self.links: List[Link] = []
        self.nameToNode: Dict[str, Node] = {}
        self.built = False
        self.started = False
        #: The netloom run (a :class:`netloom.Net`) while the network is up.
        self.live: Any = None
        self._said: set = set()
        if topo is not None and build:
            self.build()

    @property
    def experiment(self) -> str:
        """The netloom experiment's name (``netloom stats --name ...`` reads it)."""
        return self.live.name if self.live is not None else ""

    def _say_once(self, key: str, text: str, say: Any = info) -> None:
        if key not in self._said:
            self._said.add(key)
            say(text)

    # Building.

    def _node(self, ref: NodeRef) -> Node:
        return self.nameToNode[ref] if isinstance(ref, str) else ref

    def _before_start(self, call: str) -> None:
        if self.started:
            raise unsupported(
                f"{call} on a running network",
                "a netloom run's nodes and links are fixed when it starts; add them before "
                "net.start()",
            )

    def _add(self, node: Node) -> None:
        if node.name in self.nameToNode:
            raise NetloomError(f"netloom.mininet: there is already a node named {node.name!r}")
        node.mn = self
        self.nameToNode[node.name] = node

    def addHost(self, name: str, cls: Any = None, **params: Any) -> Host:  # noqa: N802
        """Adds a host (``cls`` or the net's ``host``; ``custom``/``partial`` ones too)."""
        self._before_start("addHost")
        params.pop("isSwitch", None)
        factory = cls or self.host
        klass, _ = unwrap(factory)
        if not (isinstance(klass, type) and issubclass(klass, Host)):
            raise unsupported(
                f"addHost({name!r}, cls={getattr(klass, '__name__', klass)})",
                "a host class must be netloom.mininet's Host or a subclass (from mininet.node "
                "under netloom)",
            )
        host = factory(name, **params)
        self._add(host)
        self.hosts.append(host)
        return host  # type: ignore[no-any-return]

    def addSwitch(self, name: str, cls: Any = None, **params: Any) -> Switch:  # noqa: N802
        """Adds a switch: a netloom router."""
        self._before_start("addSwitch")
        params.pop("isSwitch", None)
        factory = cls or self.switch
        klass, _ = unwrap(factory)
        if not (isinstance(klass, type) and issubclass(klass, Switch)):
            raise unsupported(
                f"addSwitch({name!r}, cls={getattr(klass, '__name__', klass)})",
                "a switch class must be one of netloom.mininet's (all are netloom routers)",
            )
        switch = factory(name, **params)
        self._add(switch)
        self.switches.append(switch)
        return switch  # type: ignore[no-any-return]

    def addController(
        self,
        name: Any = "c0",
        controller: Any = None,  # noqa: N802
        **params: Any,
    ) -> Optional[Controller]:
        """Accepts a controller, which netloom does not use (its routers need none)."""
        if isinstance(name, Controller):
            made: Optional[Controller] = name
        else:
            factory = controller or self.controller
            if factory is None:
                return None
            if isinstance(factory, (list, tuple)):
                factory = factory[0]
            made = factory(name, **params)
        assert made is not None
        self._say_once(
            "controller",
            f"*** netloom: controller {made.name} is not used: netloom's switches are routers "
            "that forward by shortest paths, with no OpenFlow\n",
        )
        self._add(made)
        self.controllers.append(made)
        return made

    def addLink(
        self,
        node1: NodeRef,
        node2: NodeRef,
        port1: Optional[int] = None,  # noqa: N802
        port2: Optional[int] = None,
        cls: Any = None,
        **params: Any,
    ) -> Link:
        """Adds a link (``cls`` or the net's ``link``) with Mininet's link options."""
        self._before_start("addLink")
        a, b = self._node(node1), self._node(node2)
        factory = cls or self.link
        link = factory(a, b, port1=port1, port2=port2, **params)
        link.mn = self
        self.links.append(link)
        return link  # type: ignore[no-any-return]

    def addNAT(self, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        raise unsupported("addNAT", "netloom's hosts reach only the emulated network")

    def buildFromTopo(self, topo: Optional[Topo] = None) -> None:  # noqa: N802
        """Adds the topology's nodes and links: hosts in natural order (h1, h2, ..., h10), so
        that they are numbered as Mininet numbers them."""
        topo = topo or self.topo
        assert topo is not None
        if not self.controllers and self.controller:
            self.addController("c0")
        info("*** Adding hosts:\n")
        for name in topo.hosts():
            self.addHost(name, **topo.nodeInfo(name))
            info(name + " ")
        info("\n*** Adding switches:\n")
        for name in topo.switches():
            self.addSwitch(name, **topo.nodeInfo(name))
            info(name + " ")
        info("\n*** Adding links:\n")
        for a, b, params in topo.links(sort=True, withInfo=True):
            self.addLink(**params)
            info(f"({a}, {b}) ")
        info("\n")

    def build(self) -> None:
        """Adds the topology's nodes and links (``start`` does it when not done)."""
        if self.topo is not None and not self.built:
            self.buildFromTopo(self.topo)
        self.built = True

    def address_of(self, host: Host) -> str:
        """The IPv4 address ``host`` gets, as Mininet gives it: its own ``ip=`` (without a
        prefix), else ``ipBase``'s network + its place among the hosts + 1."""
        given = host.params.get("ip")
        if given:
            return str(given).split("/")[0]
        return str(self._network.network_address + self.hosts.index(host) + 1)

    def topology(self) -> Topology:
        """The netloom topology the network runs as (netloom's addition): hosts numbered from
        ``ipBase`` in the order they were added, each ``ip=`` and CPU limit its host's own."""
        t = Topology("mn", addresses=str(self._network))
        for host in self.hosts:
            attrs: Dict[str, Any] = {}
            if host.params.get("ip"):
                attrs["ipv4"] = self.address_of(host)
            cpus = getattr(host, "cpus", None)
            if cpus is not None:
                attrs["cpu"] = cpus
            t.add_host(host.name, **attrs)
        for switch in self.switches:
            t.add_router(switch.name)
        for link in self.links:
            t.links.append(link.table())
        return t

    # Running.

    def start(self) -> None:
        """Brings the network up as a netloom run; returns once every host is up (switches
        forward from the start, so ``waitConnected`` has nothing to wait for)."""
        if self.started:
            return
        if not self.built:
            self.build()
        if not self.hosts:
            raise NetloomError("netloom.mininet: the network has no hosts; add one before start")
        for key in sorted({k for link in self.links for k in link.ignored}):
            self._say_once(key, f"*** netloom: {key} ignored: {IGNORED[key]}\n")
        info(f"*** Starting {len(self.switches)} switches as netloom routers\n")
        options = dict(self.run_options)
        self.live = _live.run(
            self.topology(),
            name=options.pop("name", None) or _live.unique_name("mn"),
            binary=self.binary,
            **options,
        )
        _RUNNING.add(self)
        self.started = True
        try:
            addresses = {h["name"]: h["ipv4"] for h in self.live.info()["hosts"]}
            for host in self.hosts:
                host._ip = addresses[host.name]
                host.config(**{k: v for k, v in host.params.items() if k not in _HOST_KEYS})
            for link in self.links:
                if not link.is_up:
                    link.set_up(False)
        except BaseException:
            self.stop()
            raise
        info("*** netloom run", self.live.name, "started\n")

    def stop(self) -> None:
        """Ends every host's programs and the run (which removes the CPU limits' cgroups)."""
        if not self.started:
            return
        info("*** Stopping", len(self.hosts), "hosts\n")
        self.started = False
        _RUNNING.discard(self)
        for host in self.hosts:
            host.terminate()
        self.live.stop()
        info("*** Done\n")

    def run(self, test: Any, *args: Any, **kwargs: Any) -> Any:
        """Starts the network, runs ``test(*args, **kwargs)``, stops the network (also when the
        test raises) and returns the test's result."""
        self.start()
        try:
            return test(*args, **kwargs)
        finally:
            self.stop()

    def waitConnected(self, timeout: Optional[float] = None, delay: float = 0.5) -> bool:  # noqa: N802
        """True: netloom's routers forward as soon as the run is up."""
        return True

    def staticArp(self) -> None:  # noqa: N802
        """Nothing to do: netloom's hosts have no ARP (a TUN device)."""

    def interact(self) -> None:
        """Starts the network, runs the :class:`CLI`, stops the network."""
        from .cli import CLI

        self.start()
        try:
            CLI(self)
        finally:
            self.stop()

    # Looking nodes up.

    def getNodeByName(self, *args: str) -> Any:  # noqa: N802
        """The node named, or a list of them for several names."""
        nodes = [self[name] for name in args]
        return nodes[0] if len(nodes) == 1 else nodes

    get = getNodeByName

    def __getitem__(self, key: str) -> Any:
        try:
            return self.nameToNode[key]
        except KeyError:
            raise KeyError(
                f"netloom.mininet: no node {key!r}; nodes are {', '.join(self.nameToNode)}"
            ) from None

    def __contains__(self, item: str) -> bool:
        return item in self.nameToNode

    def __iter__(self) -> Iterator[str]:
        for node in [*self.hosts, *self.switches, *self.controllers]:
            yield node.name

    def __len__(self) -> int:
        return len(self.nameToNode)

    def keys(self) -> List[str]:
        return list(self)

    def values(self) -> List[Node]:
        return [self.nameToNode[name] for name in self]

    def items(self) -> List[Tuple[str, Node]]:
        return [(name, self.nameToNode[name]) for name in self]

    def linksBetween(self, node1: NodeRef, node2: NodeRef) -> List[Link]:  # noqa: N802
        """The links joining two nodes."""
        a, b = self._node(node1), self._node(node2)
        return [link for link in self.links if (link.node1, link.node2) in ((a, b), (b, a))]

    def configLinkStatus(self, src: str, dst: str, status: str) -> None:  # noqa: N802
        """Brings the links between ``src`` and ``dst`` ``'up'`` or ``'down'``."""
        if src not in self.nameToNode:
            error(f"src not in network: {src}\n")
        elif dst not in self.nameToNode:
            error(f"dst not in network: {dst}\n")
        elif status not in ("up", "down"):
            error(f"unknown link status: {status}\n")
        else:
            links = self.linksBetween(src, dst)
            if not links:
                error(f"src and dst not connected: {src} {dst}\n")
            for link in links:
                link.set_up(status == "up")

    # Measuring.

    @staticmethod
    def _parsePing(text: str) -> Tuple[int, int]:  # noqa: N802
        """``(sent, received)`` from ping's summary; ``(1, 0)`` when it has none."""
        if re.search(r"[uU]nreachable", text):
            return 1, 0
        found = re.search(r"(\d+) packets transmitted, (\d+)( packets)? received", text)
        if not found:
            error(f"*** Error: could not parse ping output: {text}\n")
            return 1, 0
        return int(found.group(1)), int(found.group(2))

    @staticmethod
    def _parsePingFull(text: str) -> Tuple[int, int, float, float, float, float]:  # noqa: N802
        """``(sent, received, rttmin, rttavg, rttmax, rttdev)`` from ping's output."""
        sent, received = Mininet._parsePing(text)
        rtt = re.search(r"rtt min/avg/max/mdev = ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", text)
        if received == 0 or not rtt:
            return 1, 0, 0.0, 0.0, 0.0, 0.0
        low, avg, high, dev = (float(x) for x in rtt.groups())
        return sent, received, low, avg, high, dev

    def _ping_once(self, node: Host, dest: Host, timeout: Any) -> str:
        opts = f"-W {timeout} " if timeout else ""
        return node.cmd(f"LANG=C ping -c1 {opts}{dest.IP()}")

    def ping(self, hosts: Optional[Sequence[Host]] = None, timeout: Any = None) -> float:
        """Pings between every two of ``hosts`` (default: all), one packet each way, printing
        Mininet's table; returns the percentage lost."""
        packets = lost = 0
        if not hosts:
            hosts = self.hosts
            output("*** Ping: testing ping reachability\n")
        for node in hosts:
            output(f"{node.name} -> ")
            for dest in hosts:
                if node is not dest:
                    sent, received = self._parsePing(self._ping_once(node, dest, timeout))
                    packets += sent
                    lost += sent - received
                    output(f"{dest.name} " if received else "X ")
            output("\n")
        if packets == 0:
            output("*** Warning: No packets sent\n")
            return 0.0
        ploss = 100.0 * lost / packets
        output("*** Results: %i%% dropped (%d/%d received)\n" % (ploss, packets - lost, packets))
        return ploss

    def pingFull(
        self,
        hosts: Optional[Sequence[Host]] = None,  # noqa: N802
        timeout: Any = None,
    ) -> List[Tuple[Host, Host, Tuple[Any, ...]]]:
        """As :meth:`ping`, returning ``(src, dst, (sent, received, min, avg, max, mdev))``."""
        outputs = []
        if not hosts:
            hosts = self.hosts
            output("*** Ping: testing ping reachability\n")
        for node in hosts:
            output(f"{node.name} -> ")
            for dest in hosts:
                if node is not dest:
                    parsed = self._parsePingFull(self._ping_once(node, dest, timeout))
                    outputs.append((node, dest, parsed))
                    output(f"{dest.name} " if parsed[1] else "X ")
            output("\n")
        output("*** Results: \n")
        for src, dest, (sent, received, low, avg, high, dev) in outputs:
            output(f" {src}->{dest}: {sent}/{received}, ")
            output("rtt min/avg/max/mdev %0.3f/%0.3f/%0.3f/%0.3f ms\n" % (low, avg, high, dev))
        return outputs

    def pingAll(self, timeout: Any = None) -> float:  # noqa: N802
        """:meth:`ping` between all hosts."""
        return self.ping(timeout=timeout)

    def pingPair(self) -> float:  # noqa: N802
        """:meth:`ping` between the first two hosts."""
        return self.ping(hosts=self.hosts[:2])

    def pingAllFull(self) -> List[Tuple[Host, Host, Tuple[Any, ...]]]:  # noqa: N802
        """:meth:`pingFull` between all hosts."""
        return self.pingFull()

    def pingPairFull(self) -> List[Tuple[Host, Host, Tuple[Any, ...]]]:  # noqa: N802
        """:meth:`pingFull` between the first two hosts."""
        return self.pingFull(hosts=self.hosts[:2])

    def iperf(
        self,
        hosts: Optional[Sequence[Host]] = None,
        l4Type: str = "TCP",  # noqa: N803
        udpBw: str = "10M",  # noqa: N803
        fmt: Optional[str] = None,
        seconds: int = 5,
        port: int = 5001,
    ) -> List[str]:
        """Measures throughput from the first host to the second (default: the first and last
        hosts) with iperf (version 2, as Mininet does) or, where it is not installed, iperf3, and
        returns Mininet's ``[server rate, client rate]`` strings (``[udpBw, server, client]`` for
        UDP), e.g. ``['9.6 Mbits/sec', '9.8 Mbits/sec']``."""
        client, server = hosts or [self.hosts[0], self.hosts[-1]]
        output("*** Iperf: testing", l4Type, "bandwidth between", client, "and", server, "\n")
        received, sent = _iperf.measure(client, server, l4Type, udpBw, seconds, port)
        result = [fmtBps(received, fmt or ""), fmtBps(sent, fmt or "")]
        if l4Type == "UDP":
            result.insert(0, udpBw)
        output(f"*** Results: {result}\n")
        return result

    def __repr__(self) -> str:
        state = f" {self.experiment}" if self.started else ""
        return f"<Mininet{state}: {len(self.hosts)} hosts, {len(self.switches)} switches>"


#: Host parameters the net itself uses (addresses, which netloom assigns; placement).
_HOST_KEYS = {"ip", "mac", "defaultRoute", "inNamespace", "isSwitch"}
