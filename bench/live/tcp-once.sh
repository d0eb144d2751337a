#!/usr/bin/env bash
# One TCP throughput figure through `netloom run` (root): two hosts on a 100 Gbit/s zero-delay
# link with a 1000-packet queue, busy precision on CPU 1, `iperf3 -t 3` from h1 (on CPU 0) to h2.
# Prints the receiver's Gbit/s. Usage: bench/live/tcp-once.sh [NETLOOM_BIN] [NAME]; run two
# builds alternately to compare them (docs/limits.md, "Hosts that misbehave").
set -euo pipefail
bin=${1:-target/release/netloom}
name=${2:-tcp1}
work=$(mktemp -d)
trap 'rm -rf "$work"; "$bin" stop --name "$name" >/dev/null 2>&1 || true' EXIT
printf 'hosts = ["h1", "h2"]\n[[link]]\na = "h1"\nb = "h2"\nbw = "100Gbit"\ndelay = "0us"\nqueue = 1000\n' \
    >"$work/topo.toml"
"$bin" run "$work/topo.toml" --name "$name" --precision busy --cpu 1 --detach >/dev/null
h2=$("$bin" exec --name "$name" h2 -- ip -4 -o addr show nl0 | awk '{print $4}' | cut -d/ -f1)
"$bin" exec --name "$name" h2 -- iperf3 -s -1 -D
sleep 0.3
"$bin" exec --name "$name" h1 -- taskset -c 0 iperf3 -c "$h2" -t 3 -J |
    jq '.end.sum_received.bits_per_second / 1e9'
