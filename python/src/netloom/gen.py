"""``netloom gen`` from Python: a generated topology (ModelNet's tree-mesh, Inet, ...) as a
:class:`Topology`."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Optional

from ._binary import PathLike, options_to_flags, run_netloom
from .topology import Topology


def gen(kind: str, *, binary: Optional[PathLike] = None, **flags: Any) -> Topology:
    """Runs ``netloom gen KIND`` with ``flags`` as its options (``height=2`` for ModelNet's h2,
    ``hosts_per=50``, ``cls=["access=10Mbit/1ms"]`` for repeated ``--class``) and returns the
    topology it writes."""
    if "cls" in flags:
        flags["class"] = flags.pop("cls")
    with tempfile.TemporaryDirectory(prefix="netloom-py-") as tmp:
        out = os.path.join(tmp, "gen.json")
        run_netloom(["gen", kind, "-o", out, *options_to_flags(flags)], binary=binary, timeout=300)
        with open(out, encoding="utf-8") as text:
            return Topology.from_dict(json.load(text))
