"""``mininet.clean.cleanup()``: removes what netloom experiments left behind (``mn -c``)."""

from __future__ import annotations

import subprocess
from typing import Optional

from .._binary import find_binary
from .log import info
from .net import _stop_all


def cleanup(binary: Optional[str] = None) -> None:
    """Stops the networks this process started, then runs ``netloom clean``, which removes the
    namespaces, registry entries and logs of every experiment whose process has died, and
    leaves running experiments (of this user or others) alone."""
    info("*** Stopping the networks of this process\n")
    _stop_all()
    info("*** Removing what dead netloom runs left behind\n")
    done = subprocess.run(
        [find_binary(binary), "clean"], stdin=subprocess.DEVNULL, capture_output=True, text=True
    )
    info(done.stdout + done.stderr)
    info("*** Cleanup complete.\n")


class Cleanup:
    """Mininet's class form: ``Cleanup.cleanup()``."""

    cleanup = staticmethod(cleanup)
