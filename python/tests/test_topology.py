"""Topologies built in code and loaded from files: their TOML is what netloom accepts, and what
netloom refuses is raised with netloom's own message."""

import doctest
import json

import pytest

import netloom
import netloom.topology
from conftest import DUMBBELL, cli_json, lab_topology


def test_built_topology_is_what_netloom_check_reads(binary):
    summary = lab_topology().check()
    assert (summary["name"], summary["hosts"], summary["routers"], summary["links"]) == (
        "lab",
        2,
        2,
        3,
    )
    # 1 + 5 + 1 ms between the hosts: the per-link delay overrode [defaults].
    assert summary["diameter_delay"]["delay_ns"] == 7_000_000


def test_loaded_file_writes_back_the_same_topology(binary, tmp_path):
    topo = netloom.Topology.load(DUMBBELL)
    assert topo.host_names == ["left1", "left2", "right1", "right2"]
    assert topo.classes["bottleneck"] == {"bw": "10Mbit", "delay": "10ms", "queue": "25KB"}
    written = topo.save(tmp_path / "again.toml")
    assert json.loads(cli_json(binary, "check", written, "--json")) == json.loads(
        cli_json(binary, "check", str(DUMBBELL), "--json")
    )


def test_tables_classes_and_quoted_keys_round_trip(binary, tmp_path):
    t = netloom.Topology("tables", routing="hops", defaults={"bw": "1Gbit", "delay": "1ms"})
    t.add_host("h1", group="left")
    t.add_host("h2", x=1.5, y=2)
    t.add_router("r.1")
    t.add_class(
        "wan", bw="10Mbit", delay="20ms", aqm="red", red={"min_th": 5, "max_th": 15, "max_p": "5%"}
    )
    t.add_link(
        "h1",
        "r.1",
        cls="wan",
        b_to_a={"delay": "30ms"},
        loss={"model": "gilbert-elliott", "p": "1%", "r": "30%"},
    )
    t.add_link("r.1", "h2", ecn=False, queue="64KB")
    t.check()
    # netloom reads back every table as it was written (through `netloom convert` to JSON).
    assert netloom.Topology.load(t.save(tmp_path / "t.toml")).to_dict() == t.to_dict()


def test_bad_unit_raises_netlooms_message_with_the_line_of_to_toml(binary):
    t = lab_topology()
    t.links[1]["bw"] = "10mbps"
    with pytest.raises(netloom.TopologyError) as err:
        t.check()
    line = t.to_toml().splitlines().index('bw = "10mbps"') + 1
    assert str(err.value) == (
        f'netloom: lab.toml:{line}: link r1-r2: bw "10mbps" is ambiguous: tc reads it as 10 '
        'megabytes/s, most people as 10 megabits/s; write "10Mbit" or "10MB/s"'
    )


def test_unknown_key_and_unknown_node_say_what_is_valid(binary):
    t = lab_topology()
    t.add_link("h1", "r3", bandwidth="1Gbit")
    with pytest.raises(netloom.TopologyError) as err:
        t.check()
    assert 'unknown key "bandwidth" in [[link]] (did you mean "bw"?)' in str(err.value)


def test_missing_file_is_a_topology_error(binary, tmp_path):
    with pytest.raises(netloom.TopologyError, match="nope.toml: cannot read"):
        netloom.Topology.load(tmp_path / "nope.toml")


def test_gen_builds_modelnets_h2(binary):
    h2 = netloom.gen("tree-mesh", height=2, hosts_per=50)
    assert len(h2.hosts) == 400 and h2.check()["hosts"] == 400


def test_docstring_examples():
    assert doctest.testmod(netloom.topology).failed == 0
