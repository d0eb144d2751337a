#!/usr/bin/env python3
"""What each host's /etc/netns entry costs to make and remove (docs/performance.md, "10,000 hosts").

A directory holding a hard link to one shared hosts file (netloom before) against a hard link to
one symbolic link to the first host's directory (netloom now: no inode per host), N of each, made one after another as a start-up
does and removed from T threads at once as a teardown does, in a scratch directory of /etc (the file system /etc/netns lives on: on a disk
mounted with `discard`, removing a directory waits for the block it frees to be discarded).
Usage: bench/live/etc_netns.py [N=2000] [T=64] [ROUNDS=3]. Needs write access to /etc (root).
"""
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

n, threads, rounds = (int(a) for a in (sys.argv[1:] + ["2000", "64", "3"][len(sys.argv) - 1:]))
base = tempfile.mkdtemp(prefix="netloom-etc-bench.", dir="/etc")


def timed(each, pool=None):
    start = time.monotonic()
    list(pool.map(each, range(n)) if pool else map(each, range(n)))
    return time.monotonic() - start


def make_dir(i):
    os.mkdir(f"{base}/d{i}")
    os.link(f"{base}/first/hosts", f"{base}/d{i}/hosts")


def remove_dir(i):
    os.unlink(f"{base}/d{i}/hosts")
    os.rmdir(f"{base}/d{i}")


try:
    os.mkdir(f"{base}/first")
    with open(f"{base}/first/hosts", "w") as f:
        f.write("198.18.0.1 h1\n")
    os.symlink("first", f"{base}/link")
    print(f"{n} entries made by one thread, removed by {threads}, in {base}")
    print("| round | load | dirs: make s | dirs: remove s | links: make s | links: remove s |")
    print("|---|---|---|---|---|---|")
    with ThreadPoolExecutor(threads) as pool:
        for r in range(1, rounds + 1):
            load = os.getloadavg()[0]
            times = [
                timed(make_dir),
                timed(remove_dir, pool),
                timed(lambda i: os.link(f"{base}/link", f"{base}/s{i}", follow_symlinks=False)),
                timed(lambda i: os.unlink(f"{base}/s{i}"), pool),
            ]
            print(f"| {r} | {load:.1f} | " + " | ".join(f"{t:.3f}" for t in times) + " |")
finally:
    shutil.rmtree(base)
