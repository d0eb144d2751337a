#!/usr/bin/env python3
"""A replicated key-value store across a two-site WAN: how long until a write on the master is
seen on the replica, 40 ms of round trip away.

Two sites, each a host behind its router, joined by a 100 Mbit/s WAN link of 20 ms each way
(40 ms RTT). redis-server runs in both hosts, the one in site B a replica of the one in site A.
A watcher in site B polls the replica for a key; a client in site A writes it. All hosts share
this machine's clock, so the lag is the time between the write's sending and the watcher's first
sight of the value: never less than the WAN's one-way delay, and more by whatever delays the
programs themselves (the least of the writes is the WAN's). Then the WAN's delay is changed live to 50 ms each way and the lag measured
again. Needs root and redis-server (Debian: apt-get install redis-server).

    sudo python3 examples/redis_wan.py [--writes 5]
"""

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time

import netloom

# A minimal RESP client, run inside a host with `python3 -c`: it writes (SET) or watches (GET in
# a loop) and prints the wall-clock time at which it did or saw it. The watcher says "polling"
# once its first GET has come back without the value, so the write is never made before it
# watches (on a busy machine python3 alone can take longer to start than the lag measured).
CLIENT = r"""
import socket, sys, time
def call(sock, *args):
    sock.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
    return sock.recv(65536)
mode, host, key, value = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4].encode()
sock = socket.create_connection((host, 6379))
if mode == "set":
    # The time before the write is sent: the value cannot reach the replica sooner, however
    # late this process runs again after the reply (on a busy machine, tens of ms).
    sent = time.time()
    call(sock, b"SET", key, value)
    print(sent)
else:
    deadline = time.time() + 10
    seen = call(sock, b"GET", key)
    print("polling", flush=True)
    while value not in seen:
        seen = call(sock, b"GET", key)
        if time.time() > deadline:
            sys.exit("the value never reached the replica")
    print(time.time())
"""


def topology(one_way: str) -> netloom.Topology:
    t = netloom.Topology("wan", defaults={"bw": "1Gbit", "delay": "100us"})
    for node in ("a", "b"):
        t.add_host(f"site-{node}")
        t.add_router(f"r-{node}")
        t.add_link(f"site-{node}", f"r-{node}")
    t.add_link("r-a", "r-b", bw="100Mbit", delay=one_way)
    return t


def wait_for_replication(net: netloom.Net) -> None:
    for _ in range(100):
        info = net["site-b"].cmd("redis-cli info replication").stdout
        if "master_link_status:up" in info:
            return
        time.sleep(0.1)
    sys.exit("the replica never connected to the master")


def lags(net: netloom.Net, writes: int) -> list:
    measured = []
    for i in range(writes):
        key, value = f"k{i}", f"v{i}-{time.time()}"
        watcher = net["site-b"].popen(
            ["python3", "-c", CLIENT, "get", "127.0.0.1", key, value],
            stdout=subprocess.PIPE,
            text=True,
        )
        said = watcher.stdout.readline().strip()
        if said != "polling":
            sys.exit(f"the watcher did not start polling: {said!r}")
        write = ["python3", "-c", CLIENT, "set", "127.0.0.1", key, value]
        wrote = float(net["site-a"].cmd(write, check=True).stdout)
        seen = float(watcher.communicate(timeout=15)[0])
        measured.append((seen - wrote) * 1e3)
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=5)
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        net = stack.enter_context(netloom.run(topology("20ms")))
        master = net["site-a"]
        # No persistence; its working directory a temporary one, so nothing lands where this runs.
        workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="redis-wan-"))
        common = (
            "redis-server --save '' --appendonly no --protected-mode no --bind '*' "
            f"--daemonize no --dir {workdir}"
        )
        servers = [
            master.popen(common, stdout=subprocess.DEVNULL),
            net["site-b"].popen(
                f"{common} --replicaof {master.IP()} 6379", stdout=subprocess.DEVNULL
            ),
        ]
        time.sleep(0.3)
        wait_for_replication(net)
        rtt = net["site-b"].cmd(f"ping -c 3 -i 0.2 {master.IP()}").stdout.splitlines()[-1]
        print(f"site-b -> site-a ping: {rtt}")
        before = lags(net, args.writes)
        net.link("r-a", "r-b").set(delay="50ms")
        after = lags(net, args.writes)
        for server in servers:
            server.terminate()
    for one_way, measured in (("20 ms", before), ("50 ms", after)):
        each = ", ".join(f"{x:.1f}" for x in measured)
        median = statistics.median(measured)
        least = min(measured)
        print(
            f"replication lag, {one_way} each way: median {median:.1f} ms, least {least:.1f} ms ({each})"
        )


if __name__ == "__main__":
    main()
