"""Live runs driven from Python (root): commands in hosts, link changes seen by ping against a
baseline measured in the same run, stats, events, refusals with netloom's message, and a run
that dies reported, never waited on."""

import os
import re
import signal
import time

import pytest

import netloom
from conftest import leftovers, lab_topology

pytestmark = pytest.mark.live


def rtt_ms(host, count=5):
    out = host.cmd(f"ping -4 -n -c {count} -i 0.05 h2", check=True).stdout
    return min(float(x) for x in re.findall(r"time=([\d.]+) ms", out))


def next_event(events):
    """The stream's next event but accuracy alarms, which a late release on a busy machine
    raises between any two others."""
    event = next(events)
    while event["type"] == "accuracy-alarm":
        event = next(events)
    return event


def test_commands_link_changes_stats_and_events(live):
    with netloom.run(lab_topology()) as net:
        name = net.name
        h1 = net["h1"]
        assert net.get("h2").IP() == net.info()["hosts"][1]["ipv4"]
        result = h1.cmd("echo out; echo err >&2; exit 3")
        assert (result.stdout, result.stderr, result.returncode, bool(result)) == (
            "out\n",
            "err\n",
            3,
            False,
        )
        with pytest.raises(netloom.CommandError, match="exited with code 3"):
            h1.cmd("exit 3", check=True)

        base = rtt_ms(h1)
        events = net.events(timeout=10)
        assert next_event(events)["type"] == "started"
        applied = net.link("r1", "r2").set(delay="25ms")
        assert applied["set"] == {"delay": "25ms"}
        # 20 ms more each way: the round trip grows by 40 ms over the baseline.
        assert 39 < rtt_ms(h1) - base < 45
        assert {tuple(sorted(p.items())) for p in net.link("r1", "r2").params()} and all(
            p["delay"] == "25ms" for p in net.link("r1", "r2").params()
        )
        changed = next_event(events)
        assert (changed["type"], changed["link"], changed["set"]) == (
            "link-changed",
            "r1-r2",
            {"delay": "25ms"},
        )

        net.configLinkStatus("r1", "r2", "down")
        assert not h1.cmd("ping -4 -c 1 -W 1 h2")
        net.link("r1", "r2").up()
        assert h1.cmd("ping -4 -c 1 -W 2 h2")
        kinds = [next_event(events)["type"] for _ in range(4)]
        assert kinds == ["link-changed", "routes-recomputed", "link-changed", "routes-recomputed"]

        stats = net.stats()
        h1_stats = next(h for h in stats["hosts"] if h["name"] == "h1")
        assert h1_stats["packets_out"] > 10

        sleeper = net["h2"].popen(["sleep", "60"])
        sleeper.terminate()
        assert sleeper.wait(timeout=5) == -signal.SIGTERM
    assert net.report is not None and net.report["experiment"] == name
    assert leftovers(live, name) == []


def test_refusals_carry_netlooms_message(live):
    with netloom.run(lab_topology()) as net:
        with pytest.raises(netloom.ControlError) as err:
            net.link("r1", "r2").set(dealy="5ms")
        assert 'unknown key "dealy" (did you mean "delay"?)' in str(err.value)
        with pytest.raises(
            netloom.ControlError, match=r'no node is named "r9" \(did you mean "r1"\?\)'
        ):
            net.link("r1", "r9").down()
        with pytest.raises(netloom.UnknownName, match='has no host "h9"; hosts are h1, h2'):
            net["h9"]


def test_bad_topology_is_refused_before_anything_starts(live):
    t = lab_topology("badlab")
    t.links[0]["delay"] = "1 parsec"
    with pytest.raises(netloom.TopologyError, match="badlab.toml:.*link h1-r1: delay"):
        netloom.run(t, name="py-badlab")
    assert leftovers(live, "py-badlab") == []


def test_a_run_that_dies_is_reported_not_waited_on(live):
    net = netloom.run(lab_topology(), timeout=2)
    pid = netloom.control.record(net.name)["pid"]
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    started = time.monotonic()
    with pytest.raises(netloom.RunError, match="the run has stopped or died"):
        net.stats()
    assert time.monotonic() - started < 5
    with pytest.raises(netloom.RunError, match="had ended"):
        net.stop()
    assert leftovers(live, net.name) == []


def test_a_run_that_ended_by_itself_gives_its_final_report(live):
    net = netloom.run(lab_topology(), duration="1s")
    net["h1"].cmd("ping -4 -c 2 -i 0.2 h2", check=True)
    deadline = time.monotonic() + 10
    while net.alive and time.monotonic() < deadline:
        time.sleep(0.1)
    report = net.stop()
    assert report is not None and report["uptime_ns"] >= 1_000_000_000
    assert report["accuracy"]["released"] >= 4
    assert leftovers(live, net.name) == []
