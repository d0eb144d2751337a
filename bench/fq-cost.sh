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
. "$(dirname "$0")/lib.sh"
[ $# -ge 2 ] || { sed -n '2,12p' "$0"; exit 2; }
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
in_turn "$rounds" user droptail fq_codel s \
    '{binary}: drop-tail {first:.2f} s, fq_codel {second:.2f} s user CPU (median of {n}); fq_codel costs {ratio:.2f}x (median of the rounds)' \
    "$@"
