#!/usr/bin/env python3
"""Bufferbloat: the round trip a ping sees while a TCP transfer fills a deep drop-tail queue,
against the same queue managed by CoDel.

h1 -- r1 == 10 Mbit/s, 10 ms, a 500 KB queue (400 ms at 10 Mbit/s) == r2 -- h2. For each queue
discipline the link is set live (`aqm="droptail"`, then `aqm="codel"`): ping h1 -> h2 alone (the
baseline), then again while iperf3 sends from h1 to h2. A drop-tail queue lets TCP fill it, so
the ping waits behind hundreds of milliseconds of data; CoDel drops at the head once packets wait
more than its 5 ms target, so TCP keeps the queue short and the RTT stays near the baseline.
Needs root, ping and iperf3.

    sudo python3 examples/bufferbloat.py [--seconds 8]
"""

import argparse
import re
import statistics
import subprocess
import sys
import time

import netloom


def topology() -> netloom.Topology:
    t = netloom.Topology("bloat", defaults={"bw": "1Gbit", "delay": "100us"})
    t.add_host("h1")
    t.add_host("h2")
    t.add_router("r1")
    t.add_router("r2")
    t.add_link("h1", "r1")
    t.add_link("r1", "r2", bw="10Mbit", delay="10ms", queue="500KB")
    t.add_link("r2", "h2")
    return t


def ping_rtts(host: netloom.Host, seconds: float) -> list:
    count = int(seconds / 0.2)
    out = host.cmd(f"ping -4 -n -c {count} -i 0.2 h2", timeout=seconds + 30).stdout
    return [float(x) for x in re.findall(r"time=([\d.]+) ms", out)]


def wait_listening(host: netloom.Host, port: int) -> None:
    """Until a server listens on `port` in `host`: iperf3's client fails at once if it comes
    first, and on a busy machine starting the server can take longer than any fixed pause."""
    for _ in range(200):
        if f":{port} " in host.cmd(f"ss -Hltn sport = :{port}").stdout + " ":
            return
        time.sleep(0.05)
    sys.exit(f"nothing listens on port {port} in {host.name} after 10 s")


def measure(net: netloom.Net, seconds: float) -> tuple:
    h1 = net["h1"]
    idle = ping_rtts(h1, 2)
    load = h1.popen(
        f"iperf3 -4 -c h2 -t {seconds + 2:.0f} --connect-timeout 3000",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(2)  # TCP leaves slow start and the queue fills
    loaded = ping_rtts(h1, seconds - 2)
    load.wait(timeout=seconds + 30)
    return statistics.median(idle), statistics.median(loaded)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8, help="seconds of load per discipline")
    args = parser.parse_args()
    results = {}
    with netloom.run(topology()) as net:
        server = net["h2"].popen("iperf3 -s", stdout=subprocess.DEVNULL)
        wait_listening(net["h2"], 5201)
        for aqm in ("droptail", "codel"):
            net.link("r1", "r2").set(aqm=aqm)
            results[aqm] = measure(net, args.seconds)
        server.terminate()
        drops = {
            (p["from"], p["to"]): p["drops_by_cause"]
            for p in net.stats()["pipes"]
            if (p["from"], p["to"]) == ("r1", "r2")
        }
    for aqm, (idle, loaded) in results.items():
        print(f"{aqm:9s} ping RTT median: idle {idle:6.1f} ms, under iperf3 load {loaded:6.1f} ms")
    print(f"r1->r2 drops by cause over the run: {drops[('r1', 'r2')]}")


if __name__ == "__main__":
    main()
