"""Mininet's logging calls (``setLogLevel``, ``info``, ``output``, ...): messages printed as given,
without added newlines, to standard error, at Mininet's levels."""

from __future__ import annotations

import logging
import sys
from typing import Any, Optional

#: Mininet's level between INFO and WARNING, for what a script asked to see (``output``).
OUTPUT = 25

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "output": OUTPUT,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}

LOGLEVELDEFAULT = OUTPUT


class _Stderr:
    """``sys.stderr`` as it is at each write (pytest and scripts replace it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


lg = logging.getLogger("netloom.mininet")
lg.propagate = False
_handler = logging.StreamHandler(_Stderr())  # type: ignore[arg-type]
# Mininet's messages carry their own newlines (``info('h1 ')`` continues the line).
_handler.terminator = ""
_handler.setFormatter(logging.Formatter("%(message)s"))
lg.addHandler(_handler)
lg.setLevel(LOGLEVELDEFAULT)


def setLogLevel(levelname: Optional[str] = None) -> None:  # noqa: N802 (Mininet's name)
    """Sets the level by Mininet's name (``'info'``, ``'output'``, ...; none: ``'output'``)."""
    if levelname and levelname not in LEVELS:
        raise ValueError(
            f"setLogLevel: unknown level {levelname!r}; levels are " + ", ".join(LEVELS)
        )
    lg.setLevel(LEVELS.get(levelname or "", LOGLEVELDEFAULT))


def _message(args: Any) -> str:
    # Mininet joins several arguments with spaces and leaves one as it is.
    return str(args[0]) if len(args) == 1 else " ".join(str(a) for a in args)


def debug(*args: Any) -> None:
    """Logs at DEBUG."""
    if lg.isEnabledFor(logging.DEBUG):
        lg.debug(_message(args))


def info(*args: Any) -> None:
    """Logs at INFO (what Mininet says it is doing: ``*** Starting ...``)."""
    if lg.isEnabledFor(logging.INFO):
        lg.info(_message(args))


def output(*args: Any) -> None:
    """Logs at OUTPUT (results a script asked for: pingAll's lines, iperf's)."""
    if lg.isEnabledFor(OUTPUT):
        lg.log(OUTPUT, _message(args))


def warning(*args: Any) -> None:
    """Logs at WARNING."""
    if lg.isEnabledFor(logging.WARNING):
        lg.warning(_message(args))


def error(*args: Any) -> None:
    """Logs at ERROR."""
    if lg.isEnabledFor(logging.ERROR):
        lg.error(_message(args))


warn = warning
