#!/usr/bin/env bash
# What FQ-CoDel costs the virtual-time engine against drop-tail, for one or more netloom binaries
# in turn: each round runs every binary on tree-mesh h5 with the paper's workload, every link
# drop-tail and then every link FQ-CoDel, and records each run's user CPU seconds (`/usr/bin/time`,
# so a shared machine's waiting is not counted). At the end, per binary, the median user CPU of
# each queue discipline and the median of the rounds' ratios fq_codel / drop-tail.
#
#   bench/fq-cost.sh ROUNDS BINARY...
#
# For example main's build against this tree's:
#   bench/fq-cost.sh 5 /tmp/main/target/release/netloom target/release/netloom
# TOPOLOGY (a file) replaces h5; DURATION (3s) the virtual time.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,13p' "$0"; exit 2; }
rounds=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ -n "${TOPOLOGY:-}" ]; then
    cp "$TOPOLOGY" "$dir/droptail.toml"
else
    "$1" gen tree-mesh --height 5 -o "$dir/droptail.toml" >/dev/null
fi
sed "s/^\[classes\.[a-z-]*\]$/&\naqm = \"fq_codel\"/; s/^\[defaults\]$/&\naqm = \"fq_codel\"/" \
    "$dir/droptail.toml" >"$dir/fq_codel.toml"
user() { # user BINARY AQM: user CPU seconds of one run
    /usr/bin/time -f %U -o "$dir/time" "$1" sim "$dir/$2.toml" \
        --traffic "pattern=random-k k=4 source=aimd cap=3Mbit" --duration "${DURATION:-3s}" \
        --seed 1 --json >/dev/null
    cat "$dir/time"
}
rows=()
for round in $(seq "$rounds"); do
    line="round $round:"
    for bin in "$@"; do
        drop=$(user "$bin" droptail)
        fq=$(user "$bin" fq_codel)
        rows+=("$bin $drop $fq")
        line="$line  $bin $drop / $fq s"
    done
    echo "$line"
done
printf '%s\n' "${rows[@]}" | python3 -c '
import statistics, sys
runs = {}
for line in sys.stdin:
    binary, drop, fq = line.split()
    runs.setdefault(binary, []).append((float(drop), float(fq)))
for binary, pairs in runs.items():
    drop = statistics.median(p[0] for p in pairs)
    fq = statistics.median(p[1] for p in pairs)
    ratio = statistics.median(p[1] / p[0] for p in pairs)
    print(f"{binary}: drop-tail {drop:.2f} s, fq_codel {fq:.2f} s user CPU (median of {len(pairs)}); fq_codel costs {ratio:.2f}x (median of the rounds)")
'
