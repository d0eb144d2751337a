"""netloom.mininet without a run: Mininet's link options as netloom's parameters, topologies
built as Mininet builds them, the topology file a net becomes (checked by netloom), refusals
that name the call, the runner serving ``import mininet`` from netloom and naming its examples,
and which iperf net.iperf runs."""

import functools
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from netloom.errors import NetloomError
from netloom.mininet import log, tcparams
from netloom.mininet.link import Link, TCLink
from netloom.mininet.net import Mininet
from netloom.mininet.node import CPULimitedHost, Host, Unsupported
from netloom.mininet.topo import LinearTopo, SingleSwitchTopo, Topo
from netloom.mininet.topolib import TreeTopo
from netloom.mininet.util import custom, dumpNodeConnections, fmtBps, irange, splitArgs


# Link options.


@pytest.mark.parametrize(
    "options, expected",
    [
        ({"bw": 10}, {"bw": "10Mbit"}),
        ({"bw": 0.5}, {"bw": "500kbit"}),
        ({"bw": 2.5e-3}, {"bw": "2500bit"}),
        ({"delay": "5ms"}, {"delay": "5ms"}),
        ({"delay": "1.5ms"}, {"delay": "1500us"}),
        # Under netem's jitter packets overtake each other; netloom reorders only when told.
        ({"delay": "100us", "jitter": "2ms"}, {"delay": "100us", "jitter": "2ms", "reorder": True}),
        ({"delay": "1s"}, {"delay": "1s"}),
        ({"delay": "10 msec"}, {"delay": "10ms"}),
        # A bare number is microseconds, as tc reads it.
        ({"delay": 250}, {"delay": "250us"}),
        ({"loss": 1}, {"loss": "1%"}),
        ({"loss": 0.25}, {"loss": "0.25%"}),
        ({"max_queue_size": 50}, {"queue": 50}),
    ],
)
def test_link_options_map_to_netloom_units(options, expected):
    params, ignored = tcparams.link_params(options, full=False)
    assert (params, ignored) == (expected, [])


def test_a_link_without_options_is_unshaped_with_mininets_queue():
    params, _ = tcparams.link_params({})
    assert params == {
        "bw": "10Gbit",
        "delay": "0",
        "jitter": "0",
        "reorder": False,
        "loss": "0%",
        "queue": 1000,
        "aqm": "droptail",
        "ecn": False,
    }


def test_red_and_ecn_become_netlooms_red_under_a_rate():
    red, _ = tcparams.link_params({"bw": 10, "enable_red": True}, full=False)
    assert red == {
        "bw": "10Mbit",
        "aqm": "red",
        "red": {"min_th": 20, "max_th": 23, "max_p": "100%"},
        "ecn": False,
    }
    ecn, _ = tcparams.link_params({"bw": 10, "enable_ecn": True}, full=False)
    assert ecn["aqm"] == "red" and ecn["ecn"] is True


def test_qdisc_choices_are_accepted_and_reported_as_ignored():
    params, ignored = tcparams.link_params(
        {"bw": 10, "use_htb": True, "use_tbf": True, "latency_ms": 5}, full=False
    )
    assert params == {"bw": "10Mbit"}
    assert ignored == ["use_htb", "use_tbf", "latency_ms"]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"bw": 0}, "must be above 0"),
        ({"bw": "10M"}, "number of Mbit/s"),
        ({"delay": "5 parsecs"}, "is not a time"),
        ({"loss": 150}, "not a percentage"),
        ({"loss": "1%"}, "percentage number"),
        ({"max_queue_size": 0}, "whole number of packets"),
        ({"bandwidth": 10}, "link option bandwidth=10 has no netloom counterpart"),
    ],
)
def test_bad_link_options_are_refused_by_name(options, message):
    with pytest.raises(tcparams.LinkOptionError, match=message):
        tcparams.link_params(options)


# Topologies.


def test_topologies_are_built_as_mininet_builds_them():
    single = SingleSwitchTopo(k=3)
    assert single.hosts() == ["h1", "h2", "h3"] and single.switches() == ["s1"]
    assert single.links() == [("h1", "s1"), ("h2", "s1"), ("h3", "s1")]
    assert single.port("h2", "s1") == (0, 2)

    linear = LinearTopo(k=3, n=2)
    assert linear.hosts() == ["h1s1", "h1s2", "h1s3", "h2s1", "h2s2", "h2s3"]
    assert ("s2", "s1") in linear.links() and ("s3", "s2") in linear.links()

    tree = TreeTopo(depth=2, fanout=2)
    assert tree.switches() == ["s1", "s2", "s3"] and tree.hosts() == ["h1", "h2", "h3", "h4"]


def test_nodes_sort_naturally_and_options_carry_through():
    class Options(Topo):
        def build(self):
            for i in (10, 2, 1):
                self.addHost(f"h{i}")
            self.addSwitch("s1")
            for i in (10, 2, 1):
                self.addLink(f"h{i}", "s1", bw=i)

    topo = Options(lopts={"delay": "1ms"})
    assert topo.hosts() == ["h1", "h2", "h10"]
    assert topo.hosts(sort=False) == ["h10", "h2", "h1"]
    assert [a for a, _ in topo.links(sort=True)] == ["h1", "h2", "h10"]
    assert topo.linkInfo("h2", "s1")["bw"] == 2


# The net a script builds, before start.


def test_a_net_becomes_a_netloom_topology(binary):
    net = Mininet(topo=SingleSwitchTopo(k=2), link=custom(TCLink, bw=10, delay="5ms"))
    assert [h.name for h in net.hosts] == ["h1", "h2"] and net["s1"] in net.switches
    # Mininet's addresses, in the order hosts were added; a switch has none.
    assert (net["h1"].IP(), net["h2"].IP(), net["s1"].IP()) == ("10.0.0.1", "10.0.0.2", None)
    assert [str(link) for link in net.links] == ["h1-eth0<->s1-eth1", "h2-eth0<->s1-eth2"]
    doc = net.topology().to_dict()
    assert doc["topology"]["addresses"] == "10.0.0.0/8"
    assert doc["hosts"] == ["h1", "h2"] and doc["routers"] == ["s1"]
    assert doc["link"][0] == {
        "a": "h1",
        "b": "s1",
        "bw": "10Mbit",
        "delay": "5ms",
        "jitter": "0",
        "reorder": False,
        "loss": "0%",
        "queue": 1000,
        "aqm": "droptail",
        "ecn": False,
    }
    # netloom accepts what the net writes.
    summary = net.topology().check(binary=binary)
    assert summary["hosts"] == 2


def test_per_end_options_become_one_direction(binary):
    net = Mininet()
    h1, h2, s1 = net.addHost("h1"), net.addHost("h2"), net.addSwitch("s1")
    net.addLink(h1, s1, cls=TCLink, bw=10, params2={"bw": 2, "enable_red": True})
    net.addLink(h2, s1)
    link = net.topology().to_dict()["link"][0]
    assert link["bw"] == "10Mbit"
    assert link["b_to_a"] == {
        "bw": "2Mbit",
        "aqm": "red",
        "red": {"min_th": 20, "max_th": 23, "max_p": "100%"},
    }
    net.topology().check(binary=binary)


def test_a_plain_link_with_shaping_options_is_refused_as_in_mininet():
    with pytest.raises(tcparams.LinkOptionError, match=r"takes no bw, delay: .*TCLink"):
        Mininet(topo=SingleSwitchTopo(k=2, lopts={"bw": 10, "delay": "5ms"}))


def test_host_classes_custom_and_partial_are_honoured_and_others_refused():
    net = Mininet(host=custom(CPULimitedHost, cpu=0.2))
    h1 = net.addHost("h1")
    assert isinstance(h1, CPULimitedHost) and h1.params == {"cpu": 0.2}
    h2 = net.addHost("h2", cls=functools.partial(CPULimitedHost, cpu=0.3))
    assert h2.params == {"cpu": 0.3}

    class Elsewhere:
        pass

    with pytest.raises(Unsupported, match=r"addHost\('h3', cls=Elsewhere\)"):
        net.addHost("h3", cls=Elsewhere)
    with pytest.raises(Unsupported, match="s1.cmd is not supported"):
        net.addSwitch("s1").cmd("ovs-ofctl dump-flows s1")
    with pytest.raises(Unsupported, match=r"cores=\.\.\.\) is not supported"):
        h1.config(cpu=0.2, cores=[0])


def test_a_host_refuses_commands_before_start():
    net = Mininet()
    with pytest.raises(Exception, match=r"h1.cmd: the network is not running"):
        net.addHost("h1").cmd("true")


# Logging and helpers.


def test_log_levels_and_mininets_joining(capsys):
    log.setLogLevel("output")
    log.info("hidden\n")
    log.output("shown", 1, "\n")
    log.setLogLevel("info")
    log.info("now shown\n")
    log.setLogLevel("output")
    assert capsys.readouterr().err == "shown 1 \nnow shown\n"
    with pytest.raises(ValueError, match="unknown level 'loud'"):
        log.setLogLevel("loud")


def test_helpers(capsys):
    assert list(irange(1, 3)) == [1, 2, 3]
    assert fmtBps(9_570_000) == "9.6 Mbits/sec" and fmtBps(512_000, "M") == "0.5 Mbits/sec"
    assert splitArgs("tc,bw=10,delay=5ms") == ("tc", [], {"bw": 10, "delay": "5ms"})
    net = Mininet(topo=SingleSwitchTopo(k=2))
    log.setLogLevel("output")
    dumpNodeConnections(net.hosts + net.switches)
    assert capsys.readouterr().err == (
        "h1 h1-eth0:s1-eth1\nh2 h2-eth0:s1-eth2\ns1 s1-eth1:h1-eth0 s1-eth2:h2-eth0\n"
    )


# The runner.


def test_the_runner_serves_mininet_imports_from_netloom(tmp_path):
    script = tmp_path / "build_only.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from mininet.net import Mininet
            from mininet.topo import LinearTopo
            import mininet.node, netloom.mininet.node
            assert mininet.node is netloom.mininet.node
            net = Mininet(topo=LinearTopo(k=int(sys.argv[1])))
            print(sys.argv[0].endswith("build_only.py"), [h.name for h in net.hosts])
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "netloom.mininet", str(script), "3"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == "True ['h1', 'h2', 'h3']\n"
    # Outside the runner, nothing answers for `mininet`: a real Mininet is never shadowed.
    plain = subprocess.run(
        [sys.executable, "-c", "import netloom.mininet.net, mininet"], capture_output=True
    )
    real = subprocess.run([sys.executable, "-c", "import mininet"], capture_output=True)
    assert plain.returncode == real.returncode


def test_the_runner_names_the_examples_it_carries():
    done = subprocess.run(
        [sys.executable, "-m", "netloom.mininet", "--example", "nosuch"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert done.stderr == (
        "python -m netloom.mininet: no example 'nosuch'; the examples are: cli, tclink\n"
    )


def test_a_host_subclass_in_a_script_is_a_host():
    class Named(Host):
        pass

    net = Mininet(host=Named)
    assert isinstance(net.addHost("h1"), Named)
    with pytest.raises(Unsupported, match="addSwitch"):
        net.addSwitch("s1", cls=Link)


def test_calls_netloom_cannot_honour_are_refused_by_name():
    with pytest.raises(Unsupported, match=r"Mininet\(xterms=True\) is not supported"):
        Mininet(xterms=True)
    with pytest.raises(Unsupported, match=r"Mininet\(autoPinCpus=True\) is not supported"):
        Mininet(autoPinCpus=True)
    net = Mininet(topo=SingleSwitchTopo(k=2))
    with pytest.raises(Unsupported, match="addNAT is not supported"):
        net.addNAT()
    with pytest.raises(Unsupported, match="h1.setIP is not supported"):
        net["h1"].setIP("10.0.0.9")
    with pytest.raises(Unsupported, match="s1.dpctl is not supported"):
        net["s1"].dpctl("dump-flows")
    with pytest.raises(Unsupported, match=r"sched='rt'\) is not supported"):
        CPULimitedHost("h9").config(cpu=0.5, sched="rt")


@pytest.mark.parametrize(
    "fraction, message",
    [(0, r"must be a fraction .* in \(0, 1\]"), (1.5, "must be a fraction"), (0.001, "below")],
)
def test_cpu_limits_out_of_range_are_refused(fraction, message):
    # 0.001 of the machine is under Linux's smallest quota (1000 us per 100 ms) on up to 9 CPUs.
    with pytest.raises(NetloomError, match=message):
        CPULimitedHost("h1", cpu=fraction)


def test_addresses_and_cpu_limits_go_into_the_topology(binary):
    net = Mininet(ipBase="192.168.7.0/24", host=CPULimitedHost)
    net.addHost("h1", cpu=0.25)
    net.addHost("h2", ip="192.168.7.50/24")
    net.addHost("h3")
    net.addSwitch("s1")
    for h in ("h1", "h2", "h3"):
        net.addLink(h, "s1")
    # Mininet's numbers: by the order hosts were added, h2's own address in its place.
    assert [h.IP() for h in net.hosts] == ["192.168.7.1", "192.168.7.50", "192.168.7.3"]
    doc = net.topology().to_dict()
    assert doc["topology"]["addresses"] == "192.168.7.0/24"
    cpus = round(0.25 * os.cpu_count(), 6)
    assert doc["hosts"] == [
        {"name": "h1", "cpu": cpus},
        {"name": "h2", "ipv4": "192.168.7.50"},
        "h3",
    ]
    net.topology().check(binary=binary)
    # An address outside ipBase is netloom's error, naming the host.
    net.addHost("h4", ip="10.0.0.4")
    net.addLink("h4", "s1")
    with pytest.raises(NetloomError, match=r"host h4: ipv4 10.0.0.4 is outside .*192.168.7.0/24"):
        net.topology().check(binary=binary)


def test_an_old_style_topo_built_in_its_constructor_works():
    # Mininet 2.0's style: nodes added in __init__ after Topo.__init__, no build().
    class OldStyle(Topo):
        def __init__(self, **opts):
            Topo.__init__(self, **opts)
            left, right, switch = self.addHost("h1"), self.addHost("h2"), self.addSwitch("s1")
            self.addLink(left, switch, bw=5)
            self.addLink(right, switch)

    net = Mininet(topo=OldStyle(), link=TCLink)
    assert [link["bw"] for link in net.topology().to_dict()["link"]] == ["5Mbit", "10Gbit"]


def test_net_iperf_takes_iperf2_and_not_an_iperf3_named_iperf(monkeypatch):
    from netloom.mininet import _iperf

    iperf2, iperf3 = shutil.which("iperf"), shutil.which("iperf3")
    if not iperf2 or not iperf3:
        pytest.skip("needs iperf (version 2) and iperf3 installed")
    assert _iperf.iperf2() == iperf2
    # Where `iperf` is iperf3 under another name, there is no iperf 2.
    monkeypatch.setattr(_iperf, "_which", lambda name: iperf3)
    assert _iperf.iperf2() is None


def test_net_iperf_refuses_a_transport_other_than_tcp_and_udp():
    net = Mininet(topo=SingleSwitchTopo(k=2))
    with pytest.raises(NetloomError, match=r"l4Type is 'TCP' or 'UDP', not 'SCTP'"):
        net.iperf(l4Type="SCTP")
