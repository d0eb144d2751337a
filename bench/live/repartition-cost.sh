#!/usr/bin/env bash
# What the counts dynamic repartitioning observes cost per packet-hop (docs/performance.md, "What
# repartitioning costs a live run"): `run --repartition` turns on the engine's per-(pipe, next
# pipe) transition counts, the same code `sim --observe` turns on; this runs `sim` on tree-mesh h5
# and inet with the paper's workload, with and without `--observe`, alternating, and prints the
# median packet-hop rate of each and the nanoseconds the counts add per hop. The engine's hop is
# the same code in a live driver, where a packet also costs a TUN read and write (microseconds).
# Usage: bench/live/repartition-cost.sh                    release build, 5 s of virtual time, 3 runs
#        SECONDS_SIM=10 REPEAT=5 bench/live/repartition-cost.sh
#        NETLOOM_BIN=/path/netloom bench/live/repartition-cost.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib.sh
bin=$(netloom_binary)
seconds="${SECONDS_SIM:-5}"
repeat="${REPEAT:-3}"
traffic="pattern=random-k k=4 source=aimd cap=3Mbit"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

# The rate (M packet-hops/s) of one run: `sim ARGS --json`.
rate() {
    "$bin" sim "$@" --json | python3 -c '
import json, sys
print("%.3f" % (json.load(sys.stdin)["totals"]["packet_hops_per_second"] / 1e6))'
}

median() {
    sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

echo "binary: $bin ($("$bin" --version)), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
echo "sim FILE --traffic '$traffic' --duration ${seconds}s, $repeat runs each, alternating"
echo
echo "| workload | without counts (M hops/s) | with counts | added per hop |"
echo "|---|---|---|---|"
for kind in tree-mesh inet; do
    file="$dir/$kind.toml"
    "$bin" gen "$kind" -o "$file" 2>/dev/null
    common=("$file" --traffic "$traffic" --duration "${seconds}s")
    : >"$dir/off" && : >"$dir/on"
    for _ in $(seq "$repeat"); do
        rate "${common[@]}" >>"$dir/off"
        rate "${common[@]}" --observe "$dir/observed.json" >>"$dir/on"
    done
    off=$(median <"$dir/off")
    on=$(median <"$dir/on")
    printf '| %s | %s (%s) | %s (%s) | %.1f ns |\n' "$kind" "$off" "$(sort -g "$dir/off" | paste -sd' ')" \
        "$on" "$(sort -g "$dir/on" | paste -sd' ')" "$(echo "1000 / $on - 1000 / $off" | bc -l)"
done
