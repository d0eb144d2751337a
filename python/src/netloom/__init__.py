"""Drive the netloom network emulator from Python.

Build a :class:`Topology` in code or load a file; run it live with :func:`run` (a context
manager returning a :class:`Net`: commands in hosts, link changes, stats, events over the run's
control protocol); run it in virtual time with :func:`sim` (the ``--json`` report as
dataclasses). The package runs the ``netloom`` program, found by :func:`find_binary`:
``binary=``, then ``$NETLOOM``, then the one the wheel installed beside the package, then
``PATH``. docs/python.md is the guide.
"""

from ._binary import find_binary, version
from ._version import installed as _installed_version
from .errors import (
    BinaryNotFound,
    CommandError,
    ControlError,
    NetloomError,
    RunError,
    Timeout,
    TopologyError,
    UnknownName,
    UsageError,
)
from .gen import gen
from .live import CmdResult, Host, Link, Net, run
from .sim import DropsByCause, Flow, Latency, Pipe, SimReport, Totals, sim
from .topology import Topology

__version__ = _installed_version()

__all__ = [
    "BinaryNotFound",
    "CmdResult",
    "CommandError",
    "ControlError",
    "DropsByCause",
    "Flow",
    "Host",
    "Latency",
    "Link",
    "Net",
    "NetloomError",
    "Pipe",
    "RunError",
    "SimReport",
    "Timeout",
    "Topology",
    "Totals",
    "TopologyError",
    "UnknownName",
    "UsageError",
    "find_binary",
    "gen",
    "run",
    "sim",
    "version",
]
