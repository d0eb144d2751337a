"""The exceptions the package raises, each carrying netloom's own one-line message."""

from __future__ import annotations

from typing import Optional


class NetloomError(Exception):
    """Anything netloom refused or that went wrong; ``message`` is netloom's own line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnknownName(NetloomError, KeyError):
    """``net["h9"]``: no host of that name (a ``KeyError`` too, as a mapping raises)."""

    def __str__(self) -> str:
        return self.message


class BinaryNotFound(NetloomError):
    """The ``netloom`` program could not be found (see :func:`netloom.find_binary`)."""


class TopologyError(NetloomError):
    """The topology does not load or validate: netloom's message names the file, the line, the
    node or link, and what would be valid."""


class UsageError(NetloomError):
    """A bad option: a traffic spec, a duration, a flag netloom does not take."""


class ControlError(NetloomError):
    """A running experiment refused a control request (an unknown link, a bad parameter)."""


class RunError(NetloomError):
    """A live run failed to start, died, or stopped answering; ``log`` is the tail of its log."""

    def __init__(self, message: str, log: Optional[str] = None) -> None:
        if log:
            message = f"{message}\n--- the run's log (last lines) ---\n{log}"
        super().__init__(message)
        self.log = log


class Timeout(NetloomError):
    """netloom (or a program in a host) did not finish within the time given."""


class CommandError(NetloomError):
    """A command run in a host with ``check=True`` exited with a non-zero code."""

    def __init__(self, message: str, result: object) -> None:
        super().__init__(message)
        self.result = result
