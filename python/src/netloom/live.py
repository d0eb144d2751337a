"""A live run from Python: ``netloom run --detach`` brings the topology up, the control protocol
changes and reads it, programs run in hosts through ``ip netns exec``, ``netloom stop`` ends it.
"""

from __future__ import annotations

import difflib
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from ._binary import PathLike, as_path, find_binary, options_to_flags, run_netloom
from .control import Control, log_tail, log_tail_of, record
from .errors import CommandError, NetloomError, RunError, Timeout, TopologyError, UnknownName
from .topology import Topology

Command = Union[str, Sequence[str]]

_counter = itertools.count()


def _ip_binary() -> str:
    """``ip`` from iproute2: its usual places, else whatever ``PATH`` finds (as netloom does)."""
    for path in ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"):
        if os.path.exists(path):
            return path
    return shutil.which("ip") or "ip"


def unique_name(base: str) -> str:
    """An experiment name no other run of this or another process takes: ``BASE-PID-N``, with
    the characters netloom refuses replaced, cut to 40 characters so that the control socket's
    path (``REGISTRY/NAME/control.sock``) stays within a Unix socket's 108 bytes."""
    base = re.sub(r"[^A-Za-z0-9_.-]", "-", base) or "py"
    suffix = f"-{os.getpid()}-{next(_counter)}"
    return base[: 40 - len(suffix)] + suffix


def _in_cgroup(argv: List[str], cgroup: Optional[str]) -> List[str]:
    """``argv`` started inside ``cgroup`` (a host's CPU limit, which netloom made and names in
    the run's record), or as it is without one: the shell joins it, then becomes ``argv``, so
    everything the program starts is held too."""
    if not cgroup:
        return argv
    procs = os.path.join(cgroup, "cgroup.procs")
    return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', procs, *argv]


def _argv(command: Command) -> List[str]:
    """A shell command line runs under ``sh -c``; a list is the program and its arguments."""
    return ["sh", "-c", command] if isinstance(command, str) else [str(c) for c in command]


@dataclass
class CmdResult:
    """What a command run in a host printed and how it ended. True when it exited 0; ``str()`` is
    its output, as Mininet's ``cmd`` returns."""

    host: str
    args: List[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """Standard output, then standard error."""
        return self.stdout + self.stderr

    def __bool__(self) -> bool:
        return self.returncode == 0

    def __str__(self) -> str:
        return self.output

    def check(self) -> "CmdResult":
        """Raises :class:`netloom.CommandError` if the command did not exit 0; returns itself."""
        if self.returncode != 0:
            raise CommandError(
                f"netloom: in host {self.host}, {shlex.join(self.args)} exited with code "
                f"{self.returncode}: {self.stderr.strip() or self.stdout.strip()}",
                self,
            )
        return self


class Host:
    """A host of a running experiment: a network namespace in which programs run."""

    def __init__(self, net: "Net", name: str, info: Dict[str, Any]) -> None:
        self.net = net
        self.name = name
        self.ipv4: str = info["ipv4"]
        self.ipv6: str = info["ipv6"]

    def _record(self) -> Dict[str, Any]:
        for host in record(self.net.name)["hosts"]:
            if host["name"] == self.name:
                return dict(host)
        raise RunError(f"netloom: experiment {self.net.name} has no host {self.name}")

    @property
    def namespace(self) -> str:
        """The host's network namespace, from the experiment's registry record."""
        return str(self._record()["ns"])

    @property
    def cgroup(self) -> Optional[str]:
        """The cgroup of the host's CPU limit (``cpu =`` in the topology), or None."""
        return self._record().get("cgroup")

    def popen(self, command: Command, **kwargs: Any) -> "subprocess.Popen[Any]":
        """Starts ``command`` in the host and returns its :class:`subprocess.Popen`; keywords go to
        ``Popen`` (``stdout=subprocess.PIPE``, ``text=True``, ...). The process is the program
        itself (``ip netns exec`` replaces itself with it), so ``terminate()`` reaches it; whatever
        still runs when the experiment stops is killed by netloom's teardown."""
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        try:
            entry = self._record()
        except OSError as err:
            raise RunError(
                f"netloom: experiment {self.net.name} is not registered any more ({err})",
                log_tail(self.net.name),
            ) from err
        argv = [_ip_binary(), "netns", "exec", entry["ns"], *_argv(command)]
        return subprocess.Popen(_in_cgroup(argv, entry.get("cgroup")), **kwargs)

    def cmd(
        self,
        command: Command,
        *,
        check: bool = False,
        timeout: Optional[float] = 60.0,
        input: Optional[str] = None,
    ) -> CmdResult:
        """Runs ``command`` in the host (a string through ``sh -c``, or a list), waits for it and
        returns a :class:`CmdResult`. ``check=True`` raises :class:`netloom.CommandError` when it
        exits non-zero; past ``timeout`` seconds it is killed and :class:`netloom.NetloomError`
        raised."""
        args = _argv(command)
        proc = self.popen(
            args,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            proc.kill()
            proc.communicate()
            raise Timeout(
                f"netloom: in host {self.name}, {shlex.join(args)} "
                f"did not finish within {timeout} s"
            ) from expired
        result = CmdResult(self.name, args, proc.returncode, out, err)
        return result.check() if check else result

    def IP(self) -> str:  # noqa: N802 (Mininet's name)
        """The host's IPv4 address (Mininet's ``IP()``)."""
        return self.ipv4

    def __repr__(self) -> str:
        return f"<Host {self.name} {self.ipv4}>"


class Link:
    """A link of a running experiment, named by its two ends."""

    def __init__(self, net: "Net", a: str, b: str) -> None:
        self.net = net
        self.a = a
        self.b = b

    def set(self, direction: str = "both", **params: Any) -> Dict[str, Any]:
        """Changes the link's parameters now (``delay="50ms"``, ``bw="5Mbit"``, ``loss="1%"``,
        tables as dicts), in ``direction`` ``both``, ``a-b`` or ``b-a``; returns what was applied
        and when (``at_ns``). A bad key or value raises :class:`netloom.ControlError` with the
        experiment's message."""
        return dict(
            self.net.control.call("link-set", a=self.a, b=self.b, direction=direction, set=params)
        )

    def down(self) -> Dict[str, Any]:
        """Takes the link down (both directions); routes are recomputed around it."""
        return dict(self.net.control.call("link-state", a=self.a, b=self.b, up=False))

    def up(self) -> Dict[str, Any]:
        """Brings the link back up."""
        return dict(self.net.control.call("link-state", a=self.a, b=self.b, up=True))

    def params(self) -> List[Dict[str, Any]]:
        """The parameters of the link's pipes now (``stats``' ``pipes[].params``), one per
        direction."""
        return [
            p["params"]
            for p in self.net.stats()["pipes"]
            if {p["from"], p["to"]} == {self.a, self.b} and "params" in p
        ]

    def __repr__(self) -> str:
        return f"<Link {self.a}-{self.b}>"


class Net:
    """A running experiment (what :func:`run` returns). A context manager: leaving the ``with``
    stops the run and tears every host down, whatever happened inside."""

    def __init__(
        self,
        name: str,
        binary: str,
        topology_dir: Optional["tempfile.TemporaryDirectory[str]"],
        timeout: float,
    ) -> None:
        self.name = name
        self.binary = binary
        self.control = Control(name, timeout=timeout)
        owner = record(name)
        self._pid = int(owner["pid"])
        self._pid_start: Optional[int] = owner.get("pid_start")
        self._topology_dir = topology_dir
        self._info: Optional[Dict[str, Any]] = None
        self._stopped = False
        #: The final report (a dict, ``stats``' shape) once :meth:`stop` has run.
        self.report: Optional[Dict[str, Any]] = None

    # The control protocol.

    def info(self) -> Dict[str, Any]:
        """The ``info`` request's body: experiment, version, precision, hosts, links, ..."""
        self._info = dict(self.control.call("info"))
        return self._info

    def stats(self) -> Dict[str, Any]:
        """The run's report so far (``stats``): accuracy, hosts, pipes with their ``params``."""
        return dict(self.control.call("stats"))

    def events(self, timeout: Optional[float] = None) -> Iterator[Dict[str, Any]]:
        """The run's events as they happen (``started`` first, ``stopped`` last), each a dict with
        ``type`` and ``at_ns``. Ends when the run stops; ``timeout`` bounds the wait for each
        event (:class:`netloom.RunError` past it)."""
        return self.control.stream("events", read_timeout=timeout)

    def link(self, a: str, b: str) -> Link:
        """The link joining nodes ``a`` and ``b``."""
        return Link(self, a, b)

    def configLinkStatus(self, a: str, b: str, status: str) -> Dict[str, Any]:  # noqa: N802
        """Mininet's ``configLinkStatus(a, b, "up" | "down")``."""
        if status not in ("up", "down"):
            raise NetloomError(f"netloom: link status {status!r}: write 'up' or 'down'")
        link = self.link(a, b)
        return link.up() if status == "up" else link.down()

    # Hosts.

    def _hosts_info(self) -> Dict[str, Dict[str, Any]]:
        info = self._info or self.info()
        return {h["name"]: h for h in info["hosts"]}

    def __getitem__(self, name: str) -> Host:
        hosts = self._hosts_info()
        if name not in hosts:
            close = difflib.get_close_matches(name, list(hosts), n=1)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            raise UnknownName(
                f'netloom: experiment {self.name} has no host "{name}"{hint}; hosts are '
                + ", ".join(hosts)
            )
        return Host(self, name, hosts[name])

    def get(self, name: str) -> Host:
        """Mininet's ``net.get("h1")``: the host named ``name``."""
        return self[name]

    @property
    def hosts(self) -> List[Host]:
        """Every host, in the topology's order."""
        return [Host(self, name, h) for name, h in self._hosts_info().items()]

    # Ending.

    @property
    def alive(self) -> bool:
        """Whether the run's process is still there. (Its process, not its registry record,
        which goes at the start of the teardown, before the final report is written.)"""
        try:
            with open(f"/proc/{self._pid}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            return False
        # After the command's name in parentheses: the state (Z: a zombie, dead but not yet
        # reaped), then 19 fields later the start time, which tells a reused pid from the owner.
        fields = stat[stat.rindex(")") + 2 :].split()
        return fields[0] not in ("Z", "X") and (
            self._pid_start is None or int(fields[19]) == self._pid_start
        )

    def stop(self, timeout: float = 60.0) -> Optional[Dict[str, Any]]:
        """Stops the run (``netloom stop``: every host torn down, the log removed) and returns
        its final report as a dict (a second call returns the same). A run that ended by itself
        gives the report of its log; if it had died, its leftovers are cleaned and
        :class:`netloom.RunError` says so with its log's tail."""
        if self._stopped:
            return self.report
        self._stopped = True
        try:
            if not self.alive:
                # Ended by itself (`duration=`), or died: its log has the final report, or not.
                log = log_tail(self.name, lines=None)
                _teardown(self.binary, self.name)
                self.report = _final_report(log or "")
                if self.report is None:
                    raise RunError(
                        f"netloom: experiment {self.name} had ended before it was stopped",
                        log_tail_of(log),
                    )
                return self.report
            done = run_netloom(["stop", "--name", self.name], binary=self.binary, timeout=timeout)
        except NetloomError as err:
            if isinstance(err, RunError):
                raise
            tail = log_tail(self.name)
            _teardown(self.binary, self.name)
            raise RunError(
                f"netloom: experiment {self.name} had ended: {err.message}", tail
            ) from err
        finally:
            if self._topology_dir is not None:
                self._topology_dir.cleanup()
        self.report = _final_report(done.stdout)
        return self.report

    def __enter__(self) -> "Net":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.stop()
            return
        # The body's exception is the one to see; the run is still torn down.
        try:
            self.stop()
        except NetloomError:
            pass

    def __repr__(self) -> str:
        return f"<Net {self.name}{' stopped' if self._stopped else ''}>"


def _teardown(binary: str, name: str) -> None:
    """Best effort, for a run in an unknown state: stop it, then clean what a dead one left (its
    namespaces, registry entry and log). Touches experiment ``name`` only."""
    for command in ("stop", "clean"):
        try:
            subprocess.run(
                [binary, command, "--name", name],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=60,
            )
        except subprocess.TimeoutExpired:
            pass


def _final_report(output: str) -> Optional[Dict[str, Any]]:
    """The JSON report in ``netloom stop``'s output (the run was started with ``--json``): the
    object from the line ``{`` to the line ``}``."""
    lines = output.splitlines()
    try:
        first = lines.index("{")
        last = len(lines) - 1 - lines[::-1].index("}")
    except ValueError:
        return None
    return dict(json.loads("\n".join(lines[first : last + 1])))


def run(
    topology: Union[Topology, PathLike],
    name: Optional[str] = None,
    workers: Optional[int] = None,
    *,
    binary: Optional[PathLike] = None,
    timeout: float = 10.0,
    start_timeout: float = 120.0,
    **options: Any,
) -> Net:
    """Brings ``topology`` (a :class:`Topology` or a file) up live with ``netloom run --detach``
    and returns the :class:`Net`, once every host is up. Use it as a context manager::

        with netloom.run(topo) as net:
            print(net["h1"].cmd("ping -c 3 h2").output)

    ``name`` is the experiment's name (default: the topology's, made unique); any other flag of
    ``run`` is a keyword (``precision="busy"``, ``no_gso=True``, ``duration="30s"``).
    ``timeout`` bounds every control request, ``start_timeout`` the start. Needs root. A bad
    topology raises :class:`netloom.TopologyError`, a run that cannot start
    :class:`netloom.RunError`, each with netloom's message.
    """
    program = find_binary(binary)
    topology_dir: Optional["tempfile.TemporaryDirectory[str]"] = None
    rename: Dict[str, str] = {}
    if isinstance(topology, Topology):
        # The file lives as long as the run: netloom reads it at the start, but a person reading
        # an error or the run's log may want to see it.
        topology_dir = tempfile.TemporaryDirectory(prefix="netloom-py-")
        path = os.path.join(topology_dir.name, topology.file_name)
        with open(path, "w", encoding="utf-8") as out:
            out.write(topology.to_toml())
        rename[path] = topology.file_name
        base = topology.name or "topology"
    else:
        path = as_path(topology)
        base = os.path.splitext(os.path.basename(path))[0]
    name = name or unique_name(f"py-{base}")
    flags = options_to_flags({"workers": workers, **options})
    try:
        run_netloom(
            ["run", path, "--name", name, "--detach", "--json", *flags],
            binary=program,
            topology_files=[path],
            rename=rename,
            timeout=start_timeout,
        )
    except TopologyError:
        if topology_dir is not None:
            topology_dir.cleanup()
        raise
    except NetloomError as err:
        if isinstance(err, Timeout):
            # The background run may still be coming up under this name, which is ours alone.
            _teardown(program, name)
        if topology_dir is not None:
            topology_dir.cleanup()
        raise RunError(err.message, log_tail(name)) from err
    try:
        return Net(name, program, topology_dir, timeout)
    except OSError as err:
        tail = log_tail(name)
        _teardown(program, name)
        if topology_dir is not None:
            topology_dir.cleanup()
        raise RunError(f"netloom: experiment {name} died as it came up ({err})", tail) from err
