"""netloom.sim: the report is netloom's `sim --json`, as dataclasses and data frames; bad input
raises netloom's message."""

import json
import sys

import pytest

import netloom
from conftest import DUMBBELL, cli_json, lab_topology

TRAFFIC = "pattern=pairs pairs=left1:right1,left2:right2 source=aimd"


def test_report_mirrors_the_cli_json(binary):
    report = netloom.sim(DUMBBELL, traffic=TRAFFIC, duration="2s", seed=3, no_wall_clock=True)
    cli = json.loads(
        cli_json(
            binary,
            "sim",
            str(DUMBBELL),
            "--traffic",
            TRAFFIC,
            "--duration",
            "2s",
            "--seed",
            "3",
            "--json",
            "--no-wall-clock",
        )
    )
    assert report.raw == cli
    assert (report.schema, report.topology, report.seed, report.duration_ns) == (
        1,
        "dumbbell",
        3,
        2_000_000_000,
    )
    assert [(f.src, f.dst, f.kind, f.throughput_bps) for f in report.flows] == [
        (f["src"], f["dst"], f["kind"], f["throughput_bps"]) for f in cli["flows"]
    ]
    assert report.flows[0].latency_ns.p99 == cli["flows"][0]["latency_ns"]["p99"]
    bottleneck = next(p for p in report.pipes if (p.src, p.dst) == ("r-left", "r-right"))
    assert bottleneck.drops == bottleneck.drops_by_cause.queue > 0
    assert report.totals.packet_hops == sum(p.packets_out for p in report.pipes)
    assert report.totals.wall_seconds is None


def test_sim_of_a_built_topology_and_options(binary):
    report = netloom.sim(
        lab_topology(),
        "pattern=pairs pairs=h1:h2 source=cbr rate=1Mbit",
        duration="1s",
        series="500ms",
    )
    # A 1 Mbit/s constant-rate flow over an idle path delivers what it sends (the goodput counts
    # from the flow's start, so it may read a little above the rate).
    assert len(report.flows) == 1 and report.flows[0].lost == 0
    assert 950_000 < report.flows[0].throughput_bps < 1_050_000
    assert report.series is not None and report.series["interval_ns"] == 500_000_000


def test_bad_traffic_and_duration_raise_netlooms_message(binary):
    with pytest.raises(netloom.UsageError) as err:
        netloom.sim(DUMBBELL, "pattern=pairs pairs=left1:rightX source=aimd")
    assert (
        str(err.value)
        == 'netloom: --traffic: unknown host "rightX"; hosts are left1, left2, right1, right2'
    )
    with pytest.raises(
        netloom.UsageError, match='"5x" has an unknown unit "x"; valid units are ns, us'
    ):
        netloom.sim(DUMBBELL, TRAFFIC, duration="5x")
    with pytest.raises(netloom.UsageError, match="unexpected argument '--bogus'"):
        netloom.sim(DUMBBELL, TRAFFIC, bogus=True)


def test_bad_topology_file_is_a_topology_error(binary, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('hosts = ["h1", "h2"]\n[[link]]\na = "h1"\nb = "h2"\nbw = "10Mbit"\n')
    with pytest.raises(netloom.TopologyError, match="bad.toml.*link h1-h2.*delay"):
        netloom.sim(bad, "pattern=pairs pairs=h1:h2 source=cbr rate=1Mbit")


def test_another_schema_is_refused():
    with pytest.raises(netloom.NetloomError, match="schema 2; this package reads schema 1"):
        netloom.SimReport.from_json({"schema": 2})


def test_data_frames(binary):
    pd = pytest.importorskip("pandas", reason="pandas is not installed: the frames are not tested")
    report = netloom.sim(DUMBBELL, traffic=TRAFFIC, duration="1s")
    flows = report.flows_frame()
    assert list(flows["throughput_bps"]) == [f.throughput_bps for f in report.flows]
    assert list(flows["latency_p50_ns"]) == [f.latency_ns.p50 for f in report.flows]
    pipes = report.to_pandas()["pipes"]
    assert isinstance(pipes, pd.DataFrame) and list(pipes["drops_queue"]) == [
        p.drops_by_cause.queue for p in report.pipes
    ]


def test_data_frames_without_pandas_say_how_to_get_it(binary, monkeypatch):
    report = netloom.sim(DUMBBELL, traffic=TRAFFIC, duration="1s")
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails
    with pytest.raises(ImportError, match="pip install pandas"):
        report.flows_frame()
