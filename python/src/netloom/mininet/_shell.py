"""A shell kept open in a host, as Mininet keeps one per node: one command at a time, its state
(working directory, variables, background jobs) kept between commands."""

from __future__ import annotations

import os
import re
import select
import shlex
import signal
import subprocess
import time
from typing import List, Optional

from ..errors import RunError

#: What the shell prints after each command: DEL, the exit code, DEL. DEL (0x7f) is what Mininet
#: uses as its prompt too: programs under test do not print it.
_DONE = re.compile(rb"\x7f(\d+)\x7f")


class Shell:
    """``bash`` started by ``argv`` (in a host's namespace), read through a pipe that carries
    standard output and standard error together, as a terminal would show them."""

    def __init__(self, argv: List[str], host: str) -> None:
        self.host = host
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            # Its own process group: stop() ends the shell and every job it left running.
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin
        self._out = self.proc.stdout.fileno()
        self._buffer = b""
        self.waiting = False
        #: The exit code of the last command that finished.
        self.lastcode: Optional[int] = None

    def send(self, command: str) -> None:
        """Starts ``command``; its output is read with :meth:`monitor` or :meth:`wait`."""
        if self.waiting:
            raise RunError(
                f"netloom.mininet: {self.host} is still running a command; read its output "
                "(waitOutput or monitor) before sending another"
            )
        # eval: a command with a syntax error fails alone instead of leaving the shell waiting
        # for the rest of it. Its standard input is /dev/null so that it cannot read the next
        # command's line (a background job `cmd &` included).
        line = f"eval {shlex.quote(command)} </dev/null; printf '\\177%d\\177' $?\n"
        try:
            self._in.write(line.encode())
            self._in.flush()
        except BrokenPipeError as err:
            raise RunError(f"netloom.mininet: the shell of {self.host} has ended") from err
        self.waiting = True

    def monitor(self, timeout: Optional[float] = None) -> str:
        """What the command printed since the last read, waiting up to ``timeout`` seconds
        (``None``: until something comes) for anything; clears :attr:`waiting` once it ended."""
        ready, _, _ = select.select([self._out], [], [], timeout)
        if ready:
            chunk = os.read(self._out, 65536)
            if not chunk:
                self.waiting = False
                raise RunError(f"netloom.mininet: the shell of {self.host} has ended")
            self._buffer += chunk
        done = _DONE.search(self._buffer)
        if done:
            text, self._buffer = self._buffer[: done.start()], self._buffer[done.end() :]
            self.lastcode = int(done.group(1))
            self.waiting = False
        else:
            # Hold back what may be the start of the end marker.
            cut = self._buffer.rfind(b"\x7f")
            cut = len(self._buffer) if cut < 0 else cut
            text, self._buffer = self._buffer[:cut], self._buffer[cut:]
        return text.decode("utf-8", errors="replace")

    def wait(self) -> str:
        """Everything the running command prints until it ends."""
        parts = []
        while self.waiting:
            parts.append(self.monitor())
        return "".join(parts)

    def interrupt(self) -> None:
        """Sends SIGINT to the running command, as Ctrl-C would. Only the shell's children get it
        (background jobs of a shell without job control ignore SIGINT, so only the foreground
        command stops); the shell itself goes on."""
        pid = self.proc.pid
        try:
            with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            return
        for child in children:
            try:
                os.kill(child, signal.SIGINT)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        """Ends the shell and whatever it started."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 5
        while self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        self._in.close()
        self.proc.stdout.close()  # type: ignore[union-attr]
