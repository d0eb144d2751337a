"""Mininet's command line (``CLI(net)``): its everyday commands, read from standard input (a
terminal or a pipe) or a script file, run against a netloom network."""

from __future__ import annotations

import cmd
import shlex
import sys
import time
from typing import Any, Iterable, List, Optional, TextIO

from .log import error, output
from .node import Host, Node, Unsupported
from .util import dumpNodeConnections


class CLI(cmd.Cmd):
    """Reads commands until ``exit``, ``quit`` or the end of the input. ``h1 ping h2`` runs a
    command in a host, with node names replaced by their addresses (as Mininet does)."""

    prompt = "mininet> "

    def __init__(
        self, mininet: Any, stdin: TextIO = sys.stdin, script: Optional[str] = None, **kwargs: Any
    ) -> None:
        self.mn = mininet
        # A terminal gets readline's editing; anything else (a pipe, a file) is read line by line.
        interactive = stdin is sys.stdin and stdin.isatty()
        super().__init__(stdin=stdin, stdout=sys.stdout, **kwargs)
        self.use_rawinput = interactive
        if not interactive:
            self.prompt = ""
        if script is not None:
            self.do_source(script)
            return
        output("*** Starting CLI:\n")
        while True:
            try:
                self.cmdloop()
                break
            except KeyboardInterrupt:
                output("\nInterrupt\n")

    def emptyline(self) -> bool:
        """An empty line does nothing (not: repeat the last command)."""
        return False

    def onecmd(self, line: str) -> bool:
        """Runs one command; a refused call is reported and the CLI goes on."""
        try:
            return super().onecmd(line)
        except Unsupported as err:
            error(f"*** {err}\n")
        except KeyError as err:
            error(f"*** {err.args[0] if err.args else err}\n")
        return False

    # Commands.

    def do_help(self, line: str) -> None:  # type: ignore[override]
        """Lists the commands."""
        output(
            "Commands: pingall pingallfull pingpair pingpairfull iperf [h1 h2] "
            "iperfudp bw [h1 h2] nodes net links dump intfs ports link n1 n2 up|down "
            "py expr sh cmd source file time cmd noecho node cmd exit\n"
            "NODE CMD runs CMD in host NODE, node names in CMD replaced by their addresses\n"
        )

    def do_nodes(self, _line: str) -> None:
        """Lists the nodes."""
        output("available nodes are: \n%s\n" % " ".join(self.mn.keys()))

    def do_net(self, _line: str) -> None:
        """Lists every node's links."""
        dumpNodeConnections(self.mn.values())

    def do_links(self, _line: str) -> None:
        """Lists the links and their state."""
        for link in self.mn.links:
            output(link, link.status(), "\n")

    def do_dump(self, _line: str) -> None:
        """Describes every node."""
        for node in self.mn.values():
            output(f"{node!r}\n")

    def do_intfs(self, _line: str) -> None:
        """Lists each node's interfaces."""
        for node in self.mn.values():
            output(f"{node.name}: {','.join(node.intfNames())}\n")

    def do_ports(self, _line: str) -> None:
        """Lists each switch's ports."""
        for switch in self.mn.switches:
            ports = " ".join(f"{intf.name}:{port}" for port, intf in sorted(switch.intfs.items()))
            output(f"{switch.name} {ports}\n")

    def do_pingall(self, line: str) -> None:
        """Pings between all hosts."""
        self.mn.pingAll(*line.split())

    def do_pingpair(self, _line: str) -> None:
        """Pings between the first two hosts."""
        self.mn.pingPair()

    def do_pingallfull(self, _line: str) -> None:
        """Pings between all hosts, with round-trip times."""
        self.mn.pingAllFull()

    def do_pingpairfull(self, _line: str) -> None:
        """Pings between the first two hosts, with round-trip times."""
        self.mn.pingPairFull()

    def _hosts(self, names: List[str]) -> Optional[List[Node]]:
        if not names:
            return None
        if len(names) != 2:
            error("invalid number of args: give two hosts\n")
            return []
        return [self.mn[name] for name in names]

    def do_iperf(self, line: str) -> None:
        """TCP throughput between two hosts (default: first and last)."""
        hosts = self._hosts(line.split())
        if hosts != []:
            self.mn.iperf(hosts)

    def do_iperfudp(self, line: str) -> None:
        """UDP throughput at a rate: ``iperfudp 10M [h1 h2]``."""
        args = line.split()
        if not args:
            error("usage: iperfudp bw [h1 h2]\n")
            return
        hosts = self._hosts(args[1:])
        if hosts != []:
            self.mn.iperf(hosts, l4Type="UDP", udpBw=args[0])

    def do_link(self, line: str) -> None:
        """``link s1 h1 down`` (or ``up``): the links between two nodes."""
        args = line.split()
        if len(args) != 3 or args[2] not in ("up", "down"):
            error("usage: link end1 end2 [up down]\n")
            return
        self.mn.configLinkStatus(*args)

    def do_py(self, line: str) -> None:
        """Evaluates a Python expression (or runs a statement) with the nodes and ``net`` as
        names."""
        names = dict(self.mn.nameToNode, net=self.mn)
        try:
            result = eval(line, globals(), names)  # noqa: S307 (the CLI's purpose)
            if result is not None:
                output(f"{result}\n")
        except SyntaxError:
            exec(line, globals(), names)  # noqa: S102
        except Exception as err:  # noqa: BLE001 (report and keep the CLI going)
            output(f"{type(err).__name__}: {err}\n")

    def do_sh(self, line: str) -> None:
        """Runs a shell command on the machine itself."""
        from .util import quietRun

        output(quietRun(line))

    def do_source(self, line: str) -> None:
        """Runs the commands of a file."""
        with open(line.strip(), encoding="utf-8") as script:
            for command in script:
                if command.strip() and not command.lstrip().startswith("#"):
                    output("*** " + command if command.endswith("\n") else command + "\n")
                    if self.onecmd(command.rstrip("\n")):
                        break

    def do_time(self, line: str) -> None:
        """Runs a command and says how long it took."""
        start = time.monotonic()
        self.onecmd(line)
        output("*** Elapsed time: %0.6f secs\n" % (time.monotonic() - start))

    def do_noecho(self, line: str) -> None:
        """Runs a host's command and prints nothing of its output."""
        self._in_host(line, echo=False)

    def do_x(self, line: str) -> None:
        """Refused: netloom opens no terminal windows."""
        error("*** xterm is not supported by netloom (no windows); use netloom shell HOST\n")

    do_xterm = do_gterm = do_x

    def do_dpctl(self, _line: str) -> None:
        error("*** dpctl is not supported: netloom's switches are routers, with no OpenFlow\n")

    def do_exit(self, _line: str) -> bool:
        """Leaves the CLI."""
        return True

    do_quit = do_exit

    def do_EOF(self, _line: str) -> bool:  # noqa: N802
        """The end of the input leaves the CLI."""
        output("\n")
        return True

    def default(self, line: str) -> None:
        """``NODE CMD``: runs CMD in a host."""
        self._in_host(line, echo=True)

    def _in_host(self, line: str, echo: bool) -> None:
        first, _, rest = line.strip().partition(" ")
        if first not in self.mn:
            error(f"*** Unknown command: {line}\n")
            return
        node = self.mn[first]
        if not isinstance(node, Host):
            error(f"*** {first} is a switch (a netloom router): it runs no commands\n")
            return
        if not rest:
            error(f"*** Enter a command for node: {first} <cmd>\n")
            return
        node.sendCmd(" ".join(self._addresses(_words(rest))))
        while node.waiting:
            try:
                text = node.monitor(timeoutms=100)
            except KeyboardInterrupt:
                node.sendInt()
                continue
            if echo and text:
                output(text)

    def _addresses(self, words: Iterable[str]) -> List[str]:
        """Node names replaced by their IP addresses (Mininet's rule: a word that is a node's
        name, when that node has an address)."""
        out = []
        for word in words:
            node = self.mn.nameToNode.get(word)
            out.append(node.IP() if node is not None and node.IP() else word)
        return out


def _words(text: str) -> List[str]:
    """The command split on spaces, quoting kept (the shell reads it again)."""
    try:
        lexer = shlex.shlex(text, posix=False, punctuation_chars=False)
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return text.split()
