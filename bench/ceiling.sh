#!/usr/bin/env bash
# What two CPUs give two independent sims on this machine, the ceiling of `sim --workers 2`'s
# speed-up: one `netloom sim` alone on CPU 0, then two at once, one on CPU 0 and one on CPU 1,
# each printing its M packet-hops/s. If the pair each run at a fraction f of the lone run, no
# partitioned run of the same workload can pass 2f times one worker (docs/performance.md).
#
#   bench/ceiling.sh NETLOOM FILE [ROUNDS]
#
# For example:
#   target/release/netloom gen inet -o /tmp/inet.toml
#   bench/ceiling.sh target/release/netloom /tmp/inet.toml 3
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,11p' "$0"; exit 2; }
bin=$1 file=$2 rounds=${3:-1}
rate() { # rate CPU: M packet-hops/s of one 5 s run of the paper's workload pinned to CPU
  taskset -c "$1" "$bin" sim "$file" --traffic "pattern=random-k k=4 source=aimd cap=3Mbit" \
    --duration 5s --seed 1 2>&1 | grep -o '[0-9.]* M packet-hops/s' | cut -d' ' -f1
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for round in $(seq "$rounds"); do
  alone=$(rate 0)
  rate 1 >"$out" &
  first=$(rate 0)
  wait
  second=$(cat "$out")
  echo "round $round (load $(cut -d' ' -f1 /proc/loadavg)): alone $alone, together $first and" \
    "$second: $(echo "scale=2; ($first + $second) / $alone" | bc)x"
done
