"""A per-host CPU limit through a cgroup (v2's ``cpu.max``, or v1's CFS quota), as Mininet's
``CPULimitedHost`` makes one: every program the host's shell or ``popen`` starts runs in it."""

from __future__ import annotations

import os
import time
from typing import List

from ..errors import NetloomError

_ROOT = "/sys/fs/cgroup"
#: Linux's smallest CFS quota, in microseconds.
_MIN_QUOTA_US = 1000


class CpuLimitError(NetloomError):
    """The CPU limit cannot be set on this machine, or is out of range."""


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


class CpuLimit:
    """A cgroup named after the experiment and host, holding ``fraction`` of the whole machine's
    CPU time (Mininet's meaning of ``cpu=``: 0.5 on 2 CPUs is one CPU's worth)."""

    def __init__(self, experiment: str, host: str, fraction: float, period_us: int = 100_000):
        if not 0 < fraction <= 1:
            raise CpuLimitError(
                f"netloom.mininet: {host}: cpu={fraction!r} must be a fraction of the machine's "
                "CPU time in (0, 1]"
            )
        cores = os.cpu_count() or 1
        self.quota_us = int(fraction * period_us * cores)
        self.period_us = period_us
        if self.quota_us < _MIN_QUOTA_US:
            raise CpuLimitError(
                f"netloom.mininet: {host}: cpu={fraction} is {self.quota_us} us per "
                f"{period_us} us period, below Linux's smallest quota of {_MIN_QUOTA_US} us"
            )
        leaf = f"netloom-mn/{experiment}-{host}"
        if _v2_has_cpu():
            _enable_v2_cpu(os.path.join(_ROOT, "netloom-mn"))
            self.path = os.path.join(_ROOT, leaf)
            os.makedirs(self.path, exist_ok=True)
            _write(os.path.join(self.path, "cpu.max"), f"{self.quota_us} {period_us}")
        elif os.path.isdir(os.path.join(_ROOT, "cpu")):
            self.path = os.path.join(_ROOT, "cpu", leaf)
            os.makedirs(self.path, exist_ok=True)
            _write(os.path.join(self.path, "cpu.cfs_period_us"), str(period_us))
            _write(os.path.join(self.path, "cpu.cfs_quota_us"), str(self.quota_us))
        else:
            raise CpuLimitError(
                f"netloom.mininet: {host}: CPULimitedHost needs the cgroup cpu controller "
                f"(cgroup v2's cpu.max or v1's {_ROOT}/cpu), which this machine does not offer"
            )

    @property
    def procs(self) -> str:
        """The file a process writes its pid to, to enter the cgroup."""
        return os.path.join(self.path, "cgroup.procs")

    def wrap(self, argv: List[str]) -> List[str]:
        """``argv`` started inside the cgroup (the shell enters it, then becomes ``argv``)."""
        return ["sh", "-c", f'echo $$ > "{self.procs}" && exec "$@"', "sh", *argv]

    def remove(self) -> None:
        """Removes the cgroup once its processes have gone (the run's teardown ends them)."""
        deadline = time.monotonic() + 5
        while True:
            try:
                os.rmdir(self.path)
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        parent = os.path.dirname(self.path)
        try:
            os.rmdir(parent)  # the shared netloom-mn directory, once no host uses it
        except OSError:
            pass


def _v2_has_cpu() -> bool:
    try:
        with open(os.path.join(_ROOT, "cgroup.controllers"), encoding="ascii") as f:
            return "cpu" in f.read().split()
    except OSError:
        return False


def _enable_v2_cpu(parent: str) -> None:
    os.makedirs(parent, exist_ok=True)
    with open(os.path.join(_ROOT, "cgroup.subtree_control"), encoding="ascii") as f:
        if "cpu" not in f.read().split():
            _write(os.path.join(_ROOT, "cgroup.subtree_control"), "+cpu")
    _write(os.path.join(parent, "cgroup.subtree_control"), "+cpu")
