#!/usr/bin/env bash
# What a packet capture costs a live run at saturation (root): h1 and h2 on a 1 Gbit/s, 1 ms
# link (1000-packet queue), `iperf3 -t 5` from h1 to h2, once without a capture and once with
# `netloom capture h1 h2 -w FILE` running (both directions, to a file on disk). Prints per run
# the receiver's Gbit/s, the run's lateness p50 and p99 (its accuracy report, us), the packets the
# capture copied and those it lost, and the file's size. docs/performance.md quotes it.
# Usage: bench/live/capture.sh [NETLOOM_BIN] [ROUNDS]
set -euo pipefail
bin=${1:-target/release/netloom}
rounds=${2:-3}
name=capbench
work=$(mktemp -d)
trap 'rm -rf "$work"; "$bin" stop --name "$name" >/dev/null 2>&1 || true' EXIT
printf 'hosts = ["h1", "h2"]\n[[link]]\na = "h1"\nb = "h2"\nbw = "1Gbit"\ndelay = "1ms"\nqueue = 1000\n' \
    >"$work/topo.toml"
printf '%-8s %8s %8s %8s %10s %8s %8s\n' run Gbit/s p50_us p99_us captured lost file_MB
for round in $(seq "$rounds"); do
  for mode in none capture; do
    "$bin" run "$work/topo.toml" --name "$name" --detach >/dev/null
    h2=$("$bin" exec --name "$name" h2 -- ip -4 -o addr show nl0 | awk '{print $4}' | cut -d/ -f1)
    "$bin" exec --name "$name" h2 -- iperf3 -s -1 -D
    capture=""
    if [ "$mode" = capture ]; then
      "$bin" capture --name "$name" h1 h2 -w "$work/cap.pcapng" 2>"$work/cap.err" &
      capture=$!
      sleep 0.3
    fi
    sleep 0.3
    gbps=$("$bin" exec --name "$name" h1 -- iperf3 -c "$h2" -t 5 -J |
        jq '.end.sum_received.bits_per_second / 1e9')
    stats=$("$bin" stats --name "$name" --json)
    "$bin" stop --name "$name" >/dev/null
    captured=- lost=- size=-
    if [ -n "$capture" ]; then
      wait "$capture"
      captured=$(echo "$stats" | jq '.captures[0].captured')
      lost=$(echo "$stats" | jq '.captures[0].dropped')
      size=$(($(stat -c %s "$work/cap.pcapng") / 1000000))
      rm -f "$work/cap.pcapng"
    fi
    printf '%-8s %8.2f %8.1f %8.1f %10s %8s %8s\n' "$mode" "$gbps" \
        "$(echo "$stats" | jq '.accuracy.lateness_ns_p50 / 1000')" \
        "$(echo "$stats" | jq '.accuracy.lateness_ns_p99 / 1000')" "$captured" "$lost" "$size"
  done
done
