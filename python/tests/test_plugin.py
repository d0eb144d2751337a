"""The pytest plugin, run on inner test files by pytester: the fixtures bring a topology up for a
test and leave nothing behind when it fails or raises."""

import pytest

from conftest import DUMBBELL, leftovers


INNER = f"""
import pytest
import netloom

def remember(net):
    with open("names.txt", "a") as f:
        f.write(net.name + "\\n")

@pytest.mark.netloom(topology={str(DUMBBELL)!r})
def test_fails_with_a_marked_run(netloom_net):
    remember(netloom_net)
    assert netloom_net["left1"].cmd("ping -c 1 -W 2 right1")
    assert False, "the test fails; the run must still go"

def test_raises_with_two_runs(netloom_run):
    t = netloom.Topology("two", defaults={{"bw": "10Mbit", "delay": "1ms"}})
    t.add_host("a"); t.add_host("b"); t.add_link("a", "b")
    remember(netloom_run(t))
    remember(netloom_run({str(DUMBBELL)!r}))
    raise RuntimeError("boom")

def test_passes(netloom_run):
    net = netloom_run({str(DUMBBELL)!r}, precision="sleep")
    remember(net)
    assert net.info()["precision"] == "sleep"
"""


@pytest.mark.live
def test_runs_are_torn_down_whatever_the_test_did(live, pytester, binary):
    pytester.makepyfile(INNER)
    result = pytester.runpytest("-p", "netloom", "--netloom-binary", binary)
    result.assert_outcomes(passed=1, failed=2)
    names = (pytester.path / "names.txt").read_text().split()
    assert len(set(names)) == 4, "each run has a name of its own"
    assert all(name.startswith("pt-test_") for name in names)
    assert [leftovers(live, name) for name in names] == [[], [], [], []]


def test_fixtures_skip_where_live_runs_cannot_work(pytester, monkeypatch):
    import netloom.pytest_plugin

    monkeypatch.setattr(
        netloom.pytest_plugin, "live_unavailable", lambda: "netloom live runs need root"
    )
    pytester.makepyfile("def test_live(netloom_run):\n    pass\n")
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*netloom live runs need root*"])
