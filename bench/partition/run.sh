#!/usr/bin/env bash
# Partitioning benchmarks behind docs/partition.md: the ModelNet paper's Figures 8 and 10 in
# virtual time (efficiency and busiest core of random, k-cluster and METIS on h2, h5 and inet,
# 2 to 8 cores; SVGs into docs/partition/), then partition time for flow graphs of about 10^4
# and 10^6 vertices. Usage: bench/partition/run.sh [DURATION] (default 10s of virtual time).
set -euo pipefail
cd "$(dirname "$0")/../.."
duration="${1:-10s}"
cargo build --release --quiet -p netloom-partition --example paper --example speed
target="${CARGO_TARGET_DIR:-target}/release/examples"
echo "## Figures 8 and 10 ($duration of virtual time, seed 1)"
echo
echo "Each cell: efficiency (busiest core's CPU time / one core's, largest / mean core hops)."
echo
"$target/paper" docs/partition "$duration"
echo
echo "## Partition time (8 cores, uniform weights)"
echo
"$target/speed"
