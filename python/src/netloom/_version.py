"""The package's version: the workspace's (Cargo.toml), as the installed wheel's metadata says."""

from __future__ import annotations

from importlib import metadata

#: What ``__version__`` is when the package runs from a source tree that pip never installed
#: (``PYTHONPATH=python/src``): no metadata says which version it is.
UNKNOWN = "0+unknown"


def installed() -> str:
    """The version pip installed. maturin writes the workspace's version into the metadata, and
    the binary it built beside the package prints the same (``netloom --version``), so the
    version is written down once, in Cargo.toml."""
    try:
        return metadata.version("netloom")
    except metadata.PackageNotFoundError:
        return UNKNOWN
