#!/usr/bin/env bash
# Checks that two netloom binaries print byte-identical `sim` reports for the same seed: on
# tree-mesh h5, inet and the dumbbell, with every queue discipline (drop-tail, RED, CoDel,
# CoDel with ECN, FQ-CoDel), on one engine and on two workers. For a change that must not
# change behaviour (a refactoring), against the build before it:
#
#   git worktree add /tmp/before HEAD~1 && (cd /tmp/before && cargo build -p netloom)
#   bench/sim-identical.sh /tmp/before/target/debug/netloom target/debug/netloom
#
# Prints one line per case and "N identical, M different"; exits 1 if any differs (the first
# difference is shown). DURATION=2s by default; AQMS="droptail red codel codel+ecn fq_codel" by
# default, fewer for a change meant to alter one discipline and keep the others' reports.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { sed -n '2,10p' "$0"; exit 2; }
a=$1 b=$2
duration=${DURATION:-2s}
read -ra aqms <<<"${AQMS:-droptail red codel codel+ecn fq_codel}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$a" gen tree-mesh --height 5 -o "$dir/h5.toml" >/dev/null
"$a" gen inet --seed 1 -o "$dir/inet.toml" >/dev/null
cp examples/dumbbell.toml "$dir/dumbbell.toml"
same=0 different=0
for topo in h5 inet dumbbell; do
    for aqm in "${aqms[@]}"; do
        keys="aqm = \"${aqm%+ecn}\""
        [ "$aqm" != "${aqm%+ecn}" ] && keys="$keys\necn = true"
        # Every class of link, and the defaults, get the queue discipline.
        sed "s/^\[classes\.[a-z-]*\]$/&\n$keys/; s/^\[defaults\]$/&\n$keys/" \
            "$dir/$topo.toml" >"$dir/case.toml"
        grep -q '^\[defaults\]$\|^\[classes\.' "$dir/case.toml" ||
            printf '[defaults]\n%b\n' "$keys" >>"$dir/case.toml"
        for workers in 1 2; do
            # FQ-CoDel holds packets in flow queues that two workers cannot split: it runs on one.
            args=(sim "$dir/case.toml" --traffic "pattern=random-k k=4 source=aimd cap=3Mbit"
                --duration "$duration" --seed 1 --json --no-wall-clock --workers "$workers")
            case="$topo $aqm workers=$workers"
            "$a" "${args[@]}" >"$dir/a.json" 2>"$dir/a.err" || echo "A failed: $(cat "$dir/a.err")" >"$dir/a.json"
            "$b" "${args[@]}" >"$dir/b.json" 2>"$dir/b.err" || echo "B failed: $(cat "$dir/b.err")" >"$dir/b.json"
            if cmp -s "$dir/a.json" "$dir/b.json"; then
                same=$((same + 1))
                echo "identical  $case ($(wc -c <"$dir/a.json") bytes)"
            else
                different=$((different + 1))
                echo "DIFFERENT  $case"
                # diff's status (1: they differ) must not end the script under `set -e`.
                [ "$different" -gt 1 ] || diff "$dir/a.json" "$dir/b.json" | head -20 || true
            fi
        done
    done
done
echo "$same identical, $different different"
[ "$different" -eq 0 ]
