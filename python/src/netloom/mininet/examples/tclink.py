#!/usr/bin/env python3
"""A Mininet experiment written in Mininet's documented style: hosts on one switch over shaped
links (10 Mbit/s, 5 ms each way), reachability, round trip and throughput.

Under Mininet: sudo python3 tclink.py
On netloom:    sudo netloom-mn tclink.py                      (the script is not changed)
               sudo netloom-mn --example tclink               (the copy installed with netloom)
"""

import re
import sys

from mininet.link import TCLink
from mininet.log import info, output, setLogLevel
from mininet.net import Mininet
from mininet.topo import Topo
from mininet.util import dumpNodeConnections


class StarTopo(Topo):
    "n hosts on one switch, each over its own shaped link."

    def build(self, n=2, **linkopts):
        switch = self.addSwitch("s1")
        for i in range(1, n + 1):
            host = self.addHost("h%d" % i)
            self.addLink(host, switch, **linkopts)


def experiment(n):
    topo = StarTopo(n=n, bw=10, delay="5ms", max_queue_size=100)
    net = Mininet(topo=topo, link=TCLink, autoSetMacs=True, waitConnected=True)
    net.start()
    info("*** Connections\n")
    dumpNodeConnections(net.hosts)
    loss = net.pingAll()
    h1, h2 = net.get("h1", "h2")
    pings = h1.cmd("ping -c 5 -i 0.2 %s" % h2.IP())
    rtt = re.search(r"= ([\d.]+)/([\d.]+)/", pings)
    output("rtt-min-ms %s\n" % (rtt.group(1) if rtt else "none"))
    server, client = net.iperf((h1, h2), seconds=5)
    output("iperf-server %s\n" % server)
    net.stop()
    return loss


if __name__ == "__main__":
    setLogLevel("info")
    sys.exit(1 if experiment(int(sys.argv[1]) if len(sys.argv) > 1 else 2) else 0)
