"""Serves ``import mininet...`` from ``netloom.mininet...`` inside one process (the runner's), so
that an unmodified Mininet script runs on netloom while a real Mininet elsewhere is untouched."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any, Optional, Sequence

_PREFIX = "mininet"
_TARGET = "netloom.mininet"


class MininetAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A finder that answers for ``mininet`` and ``mininet.X`` with the module objects of
    ``netloom.mininet`` and ``netloom.mininet.X`` (the same objects, so state is shared)."""

    def find_spec(
        self,
        fullname: str,
        path: Optional[Sequence[str]] = None,
        target: Optional[types.ModuleType] = None,
    ) -> Optional[Any]:
        if fullname != _PREFIX and not fullname.startswith(_PREFIX + "."):
            return None
        real = _TARGET + fullname[len(_PREFIX) :]
        if importlib.util.find_spec(real) is None:
            return None  # so that the script gets Python's own ModuleNotFoundError
        return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname == _PREFIX)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return importlib.import_module(_TARGET + spec.name[len(_PREFIX) :])

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing: the module was run when netloom's was imported."""


def install() -> MininetAlias:
    """Puts the alias first on ``sys.meta_path`` (before any installed ``mininet``)."""
    finder = MininetAlias()
    sys.meta_path.insert(0, finder)
    return finder
