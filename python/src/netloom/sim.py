"""``netloom sim --json`` from Python: the report of docs/json.md as dataclasses, and as pandas
data frames when pandas is installed."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Type, TypeVar, Union

from ._binary import PathLike, as_path, options_to_flags, run_netloom
from .topology import Topology

#: The sim report schema this package reads (docs/json.md, "Stability").
SCHEMA = 1

T = TypeVar("T")


def _build(cls: Type[T], raw: Dict[str, Any], **typed: Any) -> T:
    """A dataclass from a report object: the fields it knows (missing ones take their default, as
    the schema adds optional fields within a version; ``typed`` overrides with objects already
    built), the object itself kept as ``raw``."""
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    values = {k: v for k, v in raw.items() if k in known and k != "raw"}
    values.update(typed)
    return cls(**values, raw=raw)  # type: ignore[call-arg]


@dataclass
class Latency:
    """One-way latency percentiles of a flow's delivered packets, ns."""

    p50: int
    p90: int
    p99: int
    max: int
    mean: int
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Flow:
    """One flow of the run (``flows[]``)."""

    src: str
    dst: str
    kind: str
    throughput_bps: int
    latency_ns: Latency
    sent: int
    delivered: int
    lost: int
    retransmits: int
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class DropsByCause:
    """A pipe's drops by cause, packets."""

    queue: int = 0
    red: int = 0
    codel: int = 0
    loss: int = 0
    link_down: int = 0
    tx_fail: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Pipe:
    """One pipe (one direction of a link, ``pipes[]``)."""

    link: str
    direction: str
    src: str
    dst: str
    packets_in: int
    packets_out: int
    bytes_out: int
    drops: int
    drops_by_cause: DropsByCause
    utilization: float
    queue_hwm_packets: int
    queue_hwm_bytes: int
    marks: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Totals:
    """Figures for the whole run (``totals``)."""

    packet_hops: int
    events: int
    unroutable: int
    ttl_expired: int
    too_big: int
    max_in_flight: int
    wall_seconds: Optional[float]
    packet_hops_per_second: Optional[float]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class SimReport:
    """The report of ``netloom sim --json``; ``partition`` and ``series`` are the optional
    objects of ``--cores``/``--assignment`` and ``--series`` as dicts (absent: ``None``)."""

    schema: int
    topology: str
    seed: int
    duration_ns: int
    flows: List[Flow]
    pipes: List[Pipe]
    totals: Totals
    partition: Optional[Dict[str, Any]] = None
    series: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: Union[str, Dict[str, Any]]) -> "SimReport":
        """The report from ``netloom sim --json``'s text or its parsed object."""
        obj: Dict[str, Any] = json.loads(data) if isinstance(data, str) else data
        if obj.get("schema") != SCHEMA:
            from .errors import NetloomError

            raise NetloomError(
                f"netloom: the sim report has schema {obj.get('schema')!r}; this package reads "
                f"schema {SCHEMA} (docs/json.md): install the package from the same netloom"
            )
        flows = [_build(Flow, f, latency_ns=_build(Latency, f["latency_ns"])) for f in obj["flows"]]
        pipes = [
            _build(
                Pipe,
                p,
                src=p["from"],
                dst=p["to"],
                drops_by_cause=_build(DropsByCause, p["drops_by_cause"]),
            )
            for p in obj["pipes"]
        ]
        return _build(cls, obj, flows=flows, pipes=pipes, totals=_build(Totals, obj["totals"]))

    def flows_frame(self) -> Any:
        """The flows as a pandas DataFrame, one row per flow, latency as ``latency_p50_ns``."""
        pd = _pandas()
        rows = []
        for f in self.flows:
            row = {k: v for k, v in f.raw.items() if k != "latency_ns"}
            row.update({f"latency_{k}_ns": v for k, v in f.raw["latency_ns"].items()})
            rows.append(row)
        return pd.DataFrame(rows)

    def pipes_frame(self) -> Any:
        """The pipes as a pandas DataFrame, one row per pipe, drops by cause as ``drops_queue``."""
        pd = _pandas()
        rows = []
        for p in self.pipes:
            row = {k: v for k, v in p.raw.items() if k != "drops_by_cause"}
            row.update({f"drops_{k}": v for k, v in p.raw["drops_by_cause"].items()})
            rows.append(row)
        return pd.DataFrame(rows)

    def to_pandas(self) -> Dict[str, Any]:
        """``{"flows": flows_frame(), "pipes": pipes_frame()}``."""
        return {"flows": self.flows_frame(), "pipes": self.pipes_frame()}


def _pandas() -> Any:
    try:
        import pandas  # type: ignore[import-untyped]
    except ImportError as err:
        raise ImportError(
            "netloom: data frames need pandas, which is not installed: `pip install pandas` "
            "(or `pip install ./python[pandas]`); the report's dataclasses work without it"
        ) from err
    return pandas


def sim(
    topology: Union[Topology, PathLike],
    traffic: str,
    duration: Optional[str] = None,
    seed: Optional[int] = None,
    workers: Optional[int] = None,
    *,
    binary: Optional[PathLike] = None,
    timeout: Optional[float] = None,
    **options: Any,
) -> SimReport:
    """Runs ``netloom sim FILE --traffic TRAFFIC --json`` in virtual time and returns the report.

    ``topology`` is a :class:`Topology` or a file netloom reads; ``traffic`` is the ``--traffic``
    spec (docs/traffic.md), ``duration`` a netloom duration (``"5s"``); any other flag of ``sim``
    is a keyword (``no_wall_clock=True``, ``series="1s"``, ``cores=4``). A bad topology raises
    :class:`netloom.TopologyError`, a bad option :class:`netloom.UsageError`, each with netloom's
    message.
    """
    flags = ["--traffic", traffic, "--json"]
    flags += options_to_flags({"duration": duration, "seed": seed, "workers": workers, **options})
    if isinstance(topology, Topology):
        with topology.written() as path:
            done = run_netloom(
                ["sim", path, *flags],
                binary=binary,
                rename={path: topology.file_name},
                timeout=timeout,
            )
    else:
        path = as_path(topology)
        done = run_netloom(
            ["sim", path, *flags], binary=binary, topology_files=[path], timeout=timeout
        )
    return SimReport.from_json(done.stdout)
