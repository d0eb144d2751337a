#!/usr/bin/env bash
# The speed-up of two workers over one, for one or more netloom binaries in turn: each round runs
# every binary with `--workers 1` and then `--workers 2` on the same workload and prints their
# packet-hops per second (the engine's loop, as `sim --json` reports it); at the end, per binary,
# the medians and the median of the rounds' ratios. Taking the binaries in turn, round by round,
# keeps the comparison fair when the VM's speed drifts (±10 % from one minute to the next here).
#
#   bench/speedup.sh TOPOLOGY ROUNDS BINARY...
#
# For example, this tree against an earlier revision built in a worktree:
#   git worktree add /tmp/before d59e0ae && (cd /tmp/before && cargo build --release -p netloom)
#   target/release/netloom gen inet -o /tmp/inet.toml
#   bench/speedup.sh /tmp/inet.toml 6 /tmp/before/target/release/netloom target/release/netloom
# The workload is the paper's (random-k, k=4, AIMD capped at 3 Mbit/s), 5 s of virtual time,
# seed 1, METIS over the workers; set TRAFFIC or DURATION to change it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -ge 3 ] || { sed -n '2,15p' "$0"; exit 2; }
topo=$1 rounds=$2
shift 2
traffic=${TRAFFIC:-pattern=random-k k=4 source=aimd cap=3Mbit}
duration=${DURATION:-5s}
rate() { # rate BINARY WORKERS: M packet-hops/s of one run
  "$1" sim "$topo" --traffic "$traffic" --duration "$duration" --seed 1 --workers "$2" --json \
    | python3 -c 'import json, sys; print("%.2f" % (json.load(sys.stdin)["totals"]["packet_hops_per_second"] / 1e6))'
}
in_turn "$rounds" rate 1 2 '' \
  '{binary}: 1 worker {first:.2f}, 2 workers {second:.2f} M packet-hops/s (median of {n}); speed-up {ratio:.2f}x (median of the rounds)' \
  "$@"
