"""A client of a running experiment's control protocol (docs/control.md): one JSON line out, one
JSON line back over the Unix socket, every call bounded by a timeout; and the registry that says
where the socket is."""

from __future__ import annotations

import json
import os
import socket
from typing import Any, Dict, Iterator, Optional

from .errors import ControlError, RunError

#: The protocol version this client speaks.
PROTOCOL = 1


def registry_dir() -> str:
    """``/run/netloom``, or ``$NETLOOM_RUN_DIR`` when set, as netloom itself decides."""
    return os.environ.get("NETLOOM_RUN_DIR") or "/run/netloom"


def socket_path(experiment: str) -> str:
    """The control socket of experiment ``experiment``."""
    return os.path.join(registry_dir(), experiment, "control.sock")


def log_path(experiment: str) -> str:
    """The log of a detached run (its output, final report included)."""
    return os.path.join(registry_dir(), f"{experiment}.log")


def record(experiment: str) -> Dict[str, Any]:
    """The experiment's registry record (``experiment.json``: its pid and hosts' namespaces)."""
    with open(os.path.join(registry_dir(), experiment, "experiment.json"), encoding="utf-8") as f:
        return dict(json.load(f))


def log_tail(experiment: str, lines: Optional[int] = 20) -> Optional[str]:
    """The last ``lines`` lines of a detached run's log (all of it for ``None``), or ``None`` when
    it has none."""
    try:
        with open(log_path(experiment), encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    return text if lines is None else log_tail_of(text, lines)


def log_tail_of(text: Optional[str], lines: int = 20) -> Optional[str]:
    """The last ``lines`` lines of ``text``."""
    return None if text is None else "\n".join(text.splitlines()[-lines:])


class Control:
    """Requests to one experiment's control socket. ``timeout`` bounds every connect, send and
    read, so a run that hangs or dies raises :class:`RunError` instead of blocking."""

    def __init__(self, experiment: str, timeout: float = 10.0) -> None:
        self.experiment = experiment
        self.timeout = timeout

    def _connect(self, request: Dict[str, Any]) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(socket_path(self.experiment))
            sock.sendall((json.dumps({"version": PROTOCOL, **request}) + "\n").encode())
        except OSError as err:
            sock.close()
            raise self._gone(f"cannot reach its control socket ({err})") from err
        return sock

    def _gone(self, what: str) -> RunError:
        return RunError(
            f"netloom: experiment {self.experiment}: {what}; the run has stopped or died",
            log_tail(self.experiment),
        )

    def _reply(self, stream: Any) -> Any:
        try:
            line = stream.readline()
        except (OSError, socket.timeout) as err:
            raise self._gone(f"no reply within {self.timeout} s ({err})") from err
        if not line:
            raise self._gone("the control socket closed without a reply")
        reply = json.loads(line)
        if reply.get("version") != PROTOCOL:
            raise ControlError(
                f"netloom: experiment {self.experiment} speaks control protocol version "
                f"{reply.get('version')!r}; this package speaks {PROTOCOL}"
            )
        if not reply.get("ok"):
            raise ControlError(f"netloom: {reply.get('error', 'request refused')}")
        return reply.get("body")

    def call(self, cmd: str, **fields: Any) -> Any:
        """Sends request ``cmd`` and returns the body of its reply; a refusal raises
        :class:`ControlError` with the experiment's message."""
        with self._connect({"cmd": cmd, **fields}) as sock, sock.makefile("rb") as stream:
            return self._reply(stream)

    def stream(
        self, cmd: str, read_timeout: Optional[float] = None, **fields: Any
    ) -> Iterator[Dict[str, Any]]:
        """Sends a streaming request (``events``) and yields each JSON line that follows the reply
        until the run closes the stream. ``read_timeout`` bounds the wait for each line (``None``:
        wait as long as the run lives; the stream ends when it stops)."""
        sock = self._connect({"cmd": cmd, **fields})
        try:
            with sock.makefile("rb") as stream:
                self._reply(stream)
                sock.settimeout(read_timeout)
                while True:
                    try:
                        line = stream.readline()
                    except (OSError, socket.timeout) as err:
                        raise self._gone(f"no event within {read_timeout} s ({err})") from err
                    if not line:
                        return
                    yield json.loads(line)
        finally:
            sock.close()
