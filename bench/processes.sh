#!/usr/bin/env bash
# Workers as processes against workers as threads (docs/performance.md, "Workers as processes"):
# `netloom sim --workers N` and `--workers N --processes` on tree-mesh h5 and inet with the
# paper's workload (METIS), runs alternating, and one engine for reference; the median packet-hop
# rate of REPEAT runs of each and its range, the windows, and whether the two reports are the
# same (with --no-wall-clock, byte for byte).
# Usage: bench/processes.sh                          release build, 5 s of virtual time, 3 runs
#        SECONDS_SIM=10 REPEAT=5 WORKERS=3 bench/processes.sh
#        NETLOOM_BIN=/path/netloom bench/processes.sh    another build
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
bin=$(netloom_binary)
seconds="${SECONDS_SIM:-5}"
repeat="${REPEAT:-3}"
workers="${WORKERS:-2}"
traffic="pattern=random-k k=4 source=aimd cap=3Mbit"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

# The rate (M packet-hops/s) and windows of one run: `sim ARGS --json`.
rate() {
    "$bin" sim "$@" --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
w = r.get("workers") or {}
print("%.2f %s" % (r["totals"]["packet_hops_per_second"] / 1e6, w.get("windows", "-")))'
}

# "median (min-max)" of the numbers on stdin.
spread() {
    sort -g | awk '{ v[NR] = $1 } END { printf "%.2f (%.2f–%.2f)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

echo "binary: $bin ($("$bin" --version)), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
echo "sim FILE --traffic '$traffic' --duration ${seconds}s, METIS, $repeat runs each, alternating"
echo
echo "| workload | 1 engine | $workers threads | $workers processes | processes / threads | windows | same report |"
echo "|---|---|---|---|---|---|---|"
for kind in tree-mesh inet; do
    file="$dir/$kind.toml"
    "$bin" gen "$kind" -o "$file" 2>/dev/null
    common=("$file" --traffic "$traffic" --duration "${seconds}s")
    : >"$dir/one" && : >"$dir/threads" && : >"$dir/processes"
    for _ in $(seq "$repeat"); do
        rate "${common[@]}" | cut -d' ' -f1 >>"$dir/one"
        rate "${common[@]}" --workers "$workers" >>"$dir/threads"
        rate "${common[@]}" --workers "$workers" --processes >>"$dir/processes"
    done
    "$bin" sim "${common[@]}" --workers "$workers" --json --no-wall-clock >"$dir/t.json"
    "$bin" sim "${common[@]}" --workers "$workers" --processes --json --no-wall-clock >"$dir/p.json"
    same=$(cmp -s "$dir/t.json" "$dir/p.json" && echo yes || echo NO)
    t=$(cut -d' ' -f1 "$dir/threads" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    p=$(cut -d' ' -f1 "$dir/processes" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    printf '| %s | %s | %s | %s | %.2f | %s | %s |\n' "$kind" "$(spread <"$dir/one")" \
        "$(cut -d' ' -f1 "$dir/threads" | spread)" "$(cut -d' ' -f1 "$dir/processes" | spread)" \
        "$(echo "$p / $t" | bc -l)" "$(head -1 "$dir/threads" | cut -d' ' -f2)" "$same"
done
