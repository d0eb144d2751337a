#!/usr/bin/env bash
# How a live run keeps its deadlines on a machine loaded past its CPUs, and what the programs
# under test get beside it on a quiet one (root). Default precision (hybrid), a 4-second
# `iperf3` TCP transfer from h1 to h2:
#   loaded  h1 - r1 - h2 at 100 Mbit/s, 1 + 11 ms one way, with HOGS busy loops (default 10)
#           beside the run: prints the share of the packets released during the transfer that
#           were over 100 us late, % (the run's own accuracy figures, `stats --json`);
#   quiet   h1 - h2 at 100 Gbit/s, 0 delay, nothing beside it: prints the transfer's Gbit/s
#           (the driver spins for long here, so this is what its priority costs the programs).
# Each binary in turn, ROUNDS rounds (bench/lib.sh `in_turn`).
#
#   bench/live/contention.sh [ROUNDS] [BINARY...]     (HOGS=N for another load)
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
rounds=${1:-3}
shift || true
[ $# -gt 0 ] || set -- "$(netloom_binary)"
hogs=${HOGS:-10}
work=$(mktemp -d)
name=contend$$
cleanup() {
    for bin in "$@"; do "$bin" stop --name "$name" >/dev/null 2>&1 || true; done
    pkill -f "contention-hog-$$" 2>/dev/null || true
    rm -rf "$work"
}
trap 'cleanup "$@"' EXIT

cat >"$work/loaded.toml" <<'EOF'
hosts = ["h1", "h2"]
routers = ["r1"]
[defaults]
bw = "100Mbit"
queue = 400
[[link]]
a = "h1"
b = "r1"
delay = "1ms"
[[link]]
a = "r1"
b = "h2"
delay = "11ms"
EOF
printf 'hosts = ["h1", "h2"]\n[[link]]\na = "h1"\nb = "h2"\nbw = "100Gbit"\ndelay = "0us"\nqueue = 1000\n' \
    >"$work/quiet.toml"

# late and released so far, from the run's own accuracy figures
late_released() {
    "$1" stats --name "$name" --json | jq -r '"\(.accuracy.late) \(.accuracy.released)"'
}

measure() {
    local bin=$1 variant=$2 before after gbps
    "$bin" run "$work/$variant.toml" --name "$name" --detach >/dev/null
    "$bin" exec --name "$name" h2 -- iperf3 -s -1 -D
    sleep 0.3
    if [ "$variant" = loaded ]; then
        for _ in $(seq "$hogs"); do
            timeout 8 bash -c "exec -a contention-hog-$$ bash -c 'while :; do :; done'" &
        done
        sleep 1
    fi
    before=$(late_released "$bin")
    gbps=$("$bin" exec --name "$name" h1 -- iperf3 -c h2 -t 4 -J | jq '.end.sum_received.bits_per_second / 1e9')
    after=$(late_released "$bin")
    pkill -f "contention-hog-$$" 2>/dev/null || true
    wait 2>/dev/null || true
    "$bin" stop --name "$name" >/dev/null
    if [ "$variant" = loaded ]; then
        python3 -c "b='$before'.split(); a='$after'.split(); print('%.2f' % (100 * (int(a[0]) - int(b[0])) / max(1, int(a[1]) - int(b[1]))))"
    else
        printf '%.2f\n' "$gbps"
    fi
}

echo "loaded: % of packets over 100 us late with $hogs CPU hogs; quiet: TCP Gbit/s at 0 delay"
in_turn "$rounds" measure loaded quiet "" \
    "{binary}: loaded {first:.2f} % late, quiet {second:.2f} Gbit/s (medians of {n})" "$@"
