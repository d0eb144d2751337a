#!/usr/bin/env python3
"""Mininet's command line on a linear network: three switches in a row, a host on each.

On netloom: sudo netloom-mn cli.py, or the copy installed with netloom: sudo netloom-mn --example
cli (then `pingall`, `h1 ping -c 2 h3`, `link s1 s2 down`, `exit`; or pipe the commands into it)
"""

from mininet.cli import CLI
from mininet.link import TCLink
from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.topo import LinearTopo
from mininet.util import custom

if __name__ == "__main__":
    setLogLevel("info")
    net = Mininet(topo=LinearTopo(k=3), link=custom(TCLink, bw=20, delay="2ms"))
    net.start()
    CLI(net)
    net.stop()
