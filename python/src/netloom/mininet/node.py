"""Mininet's nodes on netloom: hosts are netloom's hosts (a namespace each, a shell kept open in
it), switches are netloom's routers, controllers are accepted and have nothing to do."""

from __future__ import annotations

import os
import shlex
import subprocess
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from ..errors import NetloomError, RunError
from ..live import _in_cgroup, _ip_binary
from ._shell import Shell
from .log import debug, info

if TYPE_CHECKING:
    from .link import Intf
    from .net import Mininet


#: The smallest CPU limit netloom's topology takes (``cpu =``, docs/limits.md).
_MIN_CPUS = 0.01


class Unsupported(NetloomError, NotImplementedError):
    """A Mininet call whose result depends on what netloom does differently (L2 switching,
    OpenFlow, interfaces per link): refused with a message naming it, never run wrongly."""


def unsupported(call: str, why: str) -> Unsupported:
    """The error for ``call``, with the reason and where docs/mininet.md says more."""
    return Unsupported(f"netloom.mininet: {call} is not supported: {why} (docs/mininet.md)")


class Node:
    """A named node with numbered interfaces (``NAME-ethN``)."""

    portBase = 0

    def __init__(self, name: str, inNamespace: bool = True, **params: Any) -> None:  # noqa: N803
        self.name = name
        self.inNamespace = inNamespace
        self.params = params
        self.intfs: Dict[int, "Intf"] = {}
        self.ports: Dict["Intf", int] = {}
        self.nameToIntf: Dict[str, "Intf"] = {}
        #: The net the node belongs to (set when it is added).
        self.mn: Optional["Mininet"] = None

    # Interfaces.

    def newPort(self) -> int:  # noqa: N802
        """The next free port number."""
        return max(max(self.intfs) + 1, self.portBase) if self.intfs else self.portBase

    def addIntf(self, intf: "Intf", port: Optional[int] = None, **_: Any) -> None:  # noqa: N802
        """Registers ``intf`` at ``port`` (the next free one when None)."""
        if port is None:
            port = self.newPort()
        self.intfs[port] = intf
        self.ports[intf] = port
        self.nameToIntf[intf.name] = intf

    def intfList(self) -> List["Intf"]:  # noqa: N802
        """The interfaces in port order."""
        return [self.intfs[p] for p in sorted(self.intfs)]

    def intfNames(self) -> List[str]:  # noqa: N802
        """The interfaces' names in port order."""
        return [i.name for i in self.intfList()]

    def defaultIntf(self) -> Optional["Intf"]:  # noqa: N802
        """The interface with the lowest port, or None."""
        ports = sorted(self.intfs)
        return self.intfs[ports[0]] if ports else None

    def intf(self, intf: Any = None) -> Optional["Intf"]:
        """The default interface, or the one named ``intf`` (an interface is returned as is)."""
        if intf is None:
            return self.defaultIntf()
        if isinstance(intf, str):
            return self.nameToIntf[intf]
        return intf  # type: ignore[no-any-return]

    def connectionsTo(self, node: "Node") -> List[Tuple["Intf", "Intf"]]:  # noqa: N802
        """``(own interface, its interface)`` for each link to ``node``."""
        pairs = []
        for intf in self.intfList():
            if intf.link is not None:
                other = intf.link.otherEnd(intf)
                if other.node is node:
                    pairs.append((intf, other))
        return pairs

    def IP(self, intf: Any = None) -> Optional[str]:  # noqa: N802
        """The node's IPv4 address (None for a switch, as in Mininet)."""
        return None

    def MAC(self, intf: Any = None) -> Optional[str]:  # noqa: N802
        """None: netloom's hosts reach the network through a TUN device, which has no MAC."""
        return None

    def intfIsUp(self, intf: Any = None) -> bool:  # noqa: N802
        """Whether the interface's link is up."""
        chosen = self.intf(intf)
        return bool(chosen is not None and chosen.isUp())

    def setIP(self, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        """Refused: netloom gives every host its address from its address plan."""
        raise unsupported(
            f"{self.name}.setIP", "netloom gives each host its address from the run's plan"
        )

    def setMAC(self, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        """Refused: a TUN device has no MAC address."""
        raise unsupported(f"{self.name}.setMAC", "netloom's hosts use a TUN device, with no MAC")

    def setARP(self, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        """Refused: there is no ARP on a TUN device."""
        raise unsupported(f"{self.name}.setARP", "netloom's hosts use a TUN device, with no ARP")

    def setDefaultRoute(self, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        """Refused: a netloom host's route is one route into netloom, which routes for it."""
        raise unsupported(
            f"{self.name}.setDefaultRoute", "netloom routes every host's packets itself"
        )

    def setHostRoute(self, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        """Refused, as :meth:`setDefaultRoute`."""
        raise unsupported(f"{self.name}.setHostRoute", "netloom routes every host's packets itself")

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        intfs = ",".join(f"{i.name}:{i.IP()}" for i in self.intfList())
        return f"<{type(self).__name__} {self.name}: {intfs} pid={self.pid}> "

    @property
    def pid(self) -> Optional[int]:
        """The process id of the node's shell, when it has one."""
        return None


class Host(Node):
    """A netloom host: a network namespace reached through ``ip netns exec``, with a shell kept
    open for :meth:`cmd` (so ``cd`` and variables carry over, ``cmd('prog &')`` returns at once)."""

    def __init__(self, name: str, inNamespace: bool = True, **params: Any) -> None:  # noqa: N803
        super().__init__(name, inNamespace, **params)
        self._shell: Optional[Shell] = None
        self._namespace: Optional[str] = None
        self._cgroup: Optional[str] = None
        #: The host's IPv4 address, once the net has started (or as the address plan gives it).
        self._ip: Optional[str] = None

    # Where it runs.

    def _require_started(self, call: str) -> "Mininet":
        if self.mn is None or not self.mn.started:
            raise RunError(
                f"netloom.mininet: {self.name}.{call}: the network is not running; "
                "call net.start() first"
            )
        return self.mn

    @property
    def namespace(self) -> str:
        """The host's network namespace (from the run's registry record)."""
        if self._namespace is None:
            net = self._require_started("namespace")
            entry = net.live[self.name]._record()
            self._namespace, self._cgroup = entry["ns"], entry.get("cgroup")
        return self._namespace

    def _in_host(self, argv: List[str]) -> List[str]:
        """``argv`` run in the host's namespace (and in its CPU limit, if it has one)."""
        inner = [_ip_binary(), "netns", "exec", self.namespace, *argv]
        return _in_cgroup(inner, self._cgroup)

    @property
    def shell(self) -> Shell:
        """The host's shell, started at its first use."""
        if self._shell is None:
            self._require_started("cmd")
            self._shell = Shell(self._in_host(["bash", "--norc", "--noprofile"]), self.name)
        return self._shell

    @property
    def pid(self) -> Optional[int]:
        return self._shell.proc.pid if self._shell is not None else None

    @property
    def waiting(self) -> bool:
        """Whether a command sent with :meth:`sendCmd` is still running."""
        return self._shell is not None and self._shell.waiting

    @property
    def lastCmd(self) -> Optional[str]:  # noqa: N802
        return getattr(self, "_last_cmd", None)

    # Mininet's command calls.

    def sendCmd(self, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        """Starts a command (the arguments joined by spaces, or one list) in the host's shell
        without waiting for it."""
        command = _command_text(args)
        self._last_cmd = command
        debug(f"{self.name}: {command}\n")
        self.shell.send(command)

    def monitor(self, timeoutms: Optional[int] = None, findPid: bool = True) -> str:  # noqa: N803
        """Output of the running command since the last read, waiting up to ``timeoutms``."""
        return self.shell.monitor(None if timeoutms is None else timeoutms / 1000)

    def waitOutput(self, verbose: bool = False, findPid: bool = True) -> str:  # noqa: N802,N803
        """Waits for the running command to end and returns what it printed."""
        if not self.waiting:
            return ""
        text = self.shell.wait()
        if verbose:
            info(text)
        return text

    def cmd(self, *args: Any, **kwargs: Any) -> str:
        """Runs a command in the host's shell and returns its output (standard output and error
        together); ``verbose=True`` logs it too."""
        verbose = kwargs.pop("verbose", False)
        self.sendCmd(*args, **kwargs)
        return self.waitOutput(verbose)

    def cmdPrint(self, *args: Any) -> str:  # noqa: N802
        """:meth:`cmd`, logging the output."""
        return self.cmd(*args, verbose=True)

    def sendInt(self, intr: str = "\x03") -> None:  # noqa: N802
        """Interrupts the running command (SIGINT, as Ctrl-C)."""
        if self._shell is not None:
            self._shell.interrupt()

    @property
    def lastExitCode(self) -> Optional[int]:  # noqa: N802
        """The exit code of the last command :meth:`cmd` ran (netloom's addition)."""
        return self._shell.lastcode if self._shell is not None else None

    def popen(self, *args: Any, **kwargs: Any) -> "subprocess.Popen[Any]":
        """A program started in the host, as :class:`subprocess.Popen` (one list, one string
        split into words, or several arguments; ``shell=True`` runs a string through bash).
        Standard output and error are pipes unless given."""
        shell = kwargs.pop("shell", False)
        kwargs.pop("mncmd", None)
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            argv = [str(a) for a in args[0]]
        elif len(args) == 1 and isinstance(args[0], str):
            argv = ["bash", "-c", args[0]] if shell else shlex.split(args[0])
        else:
            argv = [str(a) for a in args]
            if shell:
                argv = ["bash", "-c", " ".join(argv)]
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.Popen(self._in_host(argv), **kwargs)

    def pexec(self, *args: Any, **kwargs: Any) -> Tuple[str, str, int]:
        """Runs a program (as :meth:`popen`) and returns ``(stdout, stderr, exit code)``."""
        proc = self.popen(*args, **kwargs)
        out, err = proc.communicate()
        return _text(out), _text(err), proc.returncode

    # Addresses.

    def IP(self, intf: Any = None) -> Optional[str]:  # noqa: N802
        """The host's IPv4 address, as Mininet gives it: its ``ip=``, else the net's ``ipBase``
        numbered in the order hosts were added (10.0.0.1, .2, ...), the same for every interface.
        Before start, the address the run will give it; the run's own once started."""
        if self._ip is None and self.mn is not None and self in self.mn.hosts:
            return self.mn.address_of(self)
        return self._ip

    def config(self, **params: Any) -> Dict[str, Any]:
        """Called by the net at start with the host's parameters."""
        return {}

    def terminate(self) -> None:
        """Ends the host's shell and whatever it started."""
        if self._shell is not None:
            self._shell.stop()
            self._shell = None

    def stop(self, deleteIntfs: bool = False) -> None:  # noqa: N803
        """As :meth:`terminate`."""
        self.terminate()

    cleanup = terminate


class CPULimitedHost(Host):
    """A host whose programs share ``cpu`` of the machine's CPU time (a fraction of all CPUs
    together, as Mininet's ``cpu=``): netloom's topology gets the host's ``cpu =`` (in CPUs), and
    netloom makes the cgroup its shell, and what :meth:`popen` starts, run in."""

    def __init__(self, name: str, **params: Any) -> None:
        self.cpu: Optional[float] = None
        super().__init__(name, **params)
        cpu = params.get("cpu")
        if cpu is not None and cpu >= 0:
            self.setCPUFrac(cpu)

    def config(self, cpu: float = -1, cores: Any = None, **params: Any) -> Dict[str, Any]:
        """Checks the CPU options (``cpu``, -1: none; ``cores``, CPU pinning, is refused); the
        limit itself is the topology's, set when the net starts."""
        if cores is not None:
            raise unsupported(
                f"{self.name}: CPULimitedHost(cores=...)", "netloom does not pin hosts to CPUs"
            )
        sched = params.pop("sched", None)
        if sched not in (None, "cfs"):
            raise unsupported(
                f"{self.name}: CPULimitedHost(sched={sched!r})",
                "netloom limits CPU with the CFS quota only",
            )
        if cpu is not None and cpu >= 0:
            self.setCPUFrac(cpu)
        return {}

    def setCPUFrac(self, f: float, sched: Optional[str] = None) -> None:  # noqa: N802
        """Limits the host to fraction ``f`` of the machine's CPU time, before the net starts
        (a running net's limits are fixed; asking for the same one again is fine)."""
        if not 0 < f <= 1:
            raise NetloomError(
                f"netloom.mininet: {self.name}: cpu={f!r} must be a fraction of the machine's "
                "CPU time in (0, 1]"
            )
        cpus = f * (os.cpu_count() or 1)
        if cpus < _MIN_CPUS:
            raise NetloomError(
                f"netloom.mininet: {self.name}: cpu={f} is {cpus:g} of a CPU, below Linux's "
                f"smallest quota ({_MIN_CPUS:g} of a CPU: 1 ms per 100 ms period)"
            )
        if self.mn is not None and self.mn.started and f != self.cpu:
            raise unsupported(
                f"{self.name}.setCPUFrac({f}) on a running network",
                "a netloom run's CPU limits are fixed when it starts; set cpu= before net.start()",
            )
        self.cpu = f

    @property
    def cpus(self) -> Optional[float]:
        """The limit in CPUs, as netloom's topology writes it (``cpu`` × the machine's CPUs)."""
        return None if self.cpu is None else round(self.cpu * (os.cpu_count() or 1), 6)

    def cgroupPath(self) -> Optional[str]:  # noqa: N802
        """The host's cgroup directory, which netloom made (netloom's addition), or None
        without a limit or before start."""
        if self.mn is None or not self.mn.started:
            return None
        _ = self.namespace
        return self._cgroup


class Switch(Node):
    """A Mininet switch, run by netloom as a router: it forwards between its links by shortest
    paths, with no OpenFlow, no L2 learning and no processes of its own."""

    portBase = 1
    dpidLen = 16

    def __init__(self, name: str, dpid: Optional[str] = None, **params: Any) -> None:
        super().__init__(name, **params)
        self.dpid = dpid

    def _refuse(self, call: str) -> Unsupported:
        return unsupported(
            f"{self.name}.{call}",
            "a switch is a netloom router, with no shell and no OpenFlow tables",
        )

    def cmd(self, *args: Any, **kwargs: Any) -> str:
        raise self._refuse("cmd")

    def sendCmd(self, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        raise self._refuse("sendCmd")

    def popen(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("popen")

    def dpctl(self, *args: Any, **kwargs: Any) -> str:
        raise self._refuse("dpctl")

    def vsctl(self, *args: Any, **kwargs: Any) -> str:
        raise self._refuse("vsctl")

    def connected(self) -> bool:
        """True: a netloom router forwards from the start, with no controller to wait for."""
        return True

    def start(self, controllers: Sequence[Any]) -> None:
        """Nothing to do: the run starts the router."""

    def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803
        """Nothing to do: the run stops the router."""

    def terminate(self) -> None:
        """Nothing to do."""

    def defaultIntf(self) -> Optional["Intf"]:  # noqa: N802
        """None, as Mininet's switches have their loopback as default."""
        return None


class OVSSwitch(Switch):
    """Accepted for Mininet's default switch: a netloom router (no Open vSwitch)."""

    def __init__(
        self,
        name: str,
        failMode: str = "secure",
        datapath: str = "kernel",  # noqa: N803
        inband: bool = False,
        protocols: Any = None,
        reconnectms: int = 1000,
        stp: bool = False,
        batch: bool = False,
        **params: Any,
    ) -> None:
        if stp:
            info(f"*** {name}: stp ignored: netloom's routers route, with no L2 loops to break\n")
        super().__init__(name, **params)


OVSKernelSwitch = OVSSwitch


class OVSBridge(OVSSwitch):
    """Accepted: a netloom router (no Open vSwitch, no L2 bridging)."""


class UserSwitch(Switch):
    """Accepted: a netloom router (no user-space OpenFlow switch)."""


class LinuxBridge(Switch):
    """Accepted: a netloom router (no Linux bridge)."""


class IVSSwitch(Switch):
    """Accepted: a netloom router."""


class Controller(Node):
    """A controller: accepted so that scripts adding one run, and does nothing, since netloom's
    routers forward without one."""

    def __init__(
        self,
        name: str,
        inNamespace: bool = False,
        command: str = "controller",  # noqa: N803
        cargs: str = "",
        cdir: Any = None,
        ip: str = "127.0.0.1",
        port: int = 6653,
        protocol: str = "tcp",
        **params: Any,
    ) -> None:
        super().__init__(name, inNamespace, **params)
        self.ip = ip
        self.port = port

    def start(self) -> None:
        """Nothing to start."""

    def stop(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to stop."""

    def checkListening(self) -> None:  # noqa: N802
        """Nothing to check."""

    def IP(self, intf: Any = None) -> Optional[str]:  # noqa: N802
        return self.ip

    @classmethod
    def isAvailable(cls) -> bool:  # noqa: N802
        return True


class OVSController(Controller):
    """Accepted, does nothing (see :class:`Controller`)."""


class NOX(Controller):
    """Accepted, does nothing (see :class:`Controller`)."""


class Ryu(Controller):
    """Accepted, does nothing (see :class:`Controller`)."""


class RemoteController(Controller):
    """Accepted, does nothing: netloom's routers do not connect to a controller (see
    :class:`Controller`)."""


DefaultController = Controller
NullController = None


def _command_text(args: Sequence[Any]) -> str:
    """Mininet joins a command's arguments with spaces; one list is joined the same way."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return " ".join(str(a) for a in args)


def _text(data: Union[str, bytes, None]) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", errors="replace")
