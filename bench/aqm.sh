#!/usr/bin/env bash
# What queue management costs the virtual-time engine: `netloom sim` on tree-mesh h5 with the
# paper's workload (as `netloom-bench sim`), every link drop-tail, then CoDel, CoDel with ECN,
# and FQ-CoDel. Prints, per queue discipline, the packet-hops per second of each run and the
# drops and marks of every pipe together (so one sees the AQM at work). RUNS=3 by default.
# Honours CARGO_TARGET_DIR. Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
bin=$(netloom_binary)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" gen tree-mesh --height 5 -o "$dir/base.toml" >/dev/null
runs=${RUNS:-3}
echo "| aqm | M packet-hops/s (each run) | queue drops | CoDel drops | marks |"
echo "|---|---|---|---|---|"
for aqm in droptail codel codel+ecn fq_codel; do
    keys="aqm = \"${aqm%+ecn}\""
    [ "$aqm" != "${aqm%+ecn}" ] && keys="$keys\necn = true"
    # Every class of link gets the queue discipline.
    sed "s/^\[classes\.[a-z-]*\]$/&\n$keys/" "$dir/base.toml" >"$dir/$aqm.toml"
    rates=""
    for _ in $(seq "$runs"); do
        "$bin" sim "$dir/$aqm.toml" --traffic "pattern=random-k k=4 source=aimd cap=3Mbit" \
            --duration 10s --seed 1 --json >"$dir/report.json"
        rates="$rates $(python3 -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["totals"]["packet_hops_per_second"] / 1e6))' "$dir/report.json")"
    done
    python3 - "$dir/report.json" "$aqm" "$rates" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = r["pipes"]
total = lambda f: sum(f(x) for x in p)
print("| %s |%s | %d | %d | %d |" % (sys.argv[2], sys.argv[3],
      total(lambda x: x["drops_by_cause"]["queue"]),
      total(lambda x: x["drops_by_cause"]["codel"]),
      total(lambda x: x["marks"])))
PY
done
