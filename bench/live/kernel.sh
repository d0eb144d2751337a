#!/usr/bin/env bash
# Kernel routers against engine routers (root): packets per second through a chain
# h1 - r1 - ... - rN - h2 of N routers, every link 100 Gbit/s without delay and a 1000-packet
# queue, for N in HOPS, once with engine routers and once with kernel routers
# ([topology] kernel_routers). For each: 64-byte UDP flat out (iperf3 -u -l 64 -b 0, socket
# buffers of 4 MB at both ends) and TCP (iperf3 -t DURATION), the receiver's rate, median of
# REPEAT runs. The emulator runs busy on CPU 1, the programs (and the kernel routers' forwarding,
# which happens in the writing thread's context) wherever the scheduler puts them.
# Prints a markdown table and writes it to bench/results/kernel-<UTC date>.md.
# Knobs: HOPS ("1 2 4"), DURATION (3, seconds per run), REPEAT (3), NETLOOM_BIN (default: build release).
set -euo pipefail
cd "$(dirname "$0")/../.."
HOPS=${HOPS:-1 2 4}
SECONDS_RUN=${DURATION:-3}
REPEAT=${REPEAT:-3}
[ "$(id -u)" = 0 ] || { echo "bench/live/kernel.sh needs root (namespaces, TUN)" >&2; exit 2; }
for tool in iperf3 jq python3; do
    command -v "$tool" >/dev/null || { echo "bench/live/kernel.sh needs $tool" >&2; exit 2; }
done
source bench/lib.sh
bin=$(netloom_binary)
name=kbench$$
work=$(mktemp -d)
trap '"$bin" stop --name "$name" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

chain() { # chain N KERNEL: the topology file
    local n=$1 kernel=$2 i prev=h1
    printf 'hosts = ["h1", "h2"]\nrouters = [' 
    for ((i = 1; i <= n; i++)); do printf '"r%d"%s' "$i" "$([ "$i" -lt "$n" ] && echo ,)"; done
    printf ']\n[topology]\nkernel_routers = %s\n[defaults]\nbw = "100Gbit"\ndelay = "0us"\nqueue = 1000\n' "$kernel"
    for ((i = 1; i <= n; i++)); do
        printf '[[link]]\na = "%s"\nb = "r%d"\n' "$prev" "$i"
        prev=r$i
    done
    printf '[[link]]\na = "%s"\nb = "h2"\n' "$prev"
}
median() { python3 -c 'import sys,statistics; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
measure() { # measure N KERNEL: "kpps gbps" medians
    chain "$1" "$2" >"$work/topo.toml"
    "$bin" run "$work/topo.toml" --name "$name" --precision busy --cpu 1 --detach >/dev/null
    local udp=() tcp=() k
    for ((k = 0; k < REPEAT; k++)); do
        "$bin" exec --name "$name" h2 -- iperf3 -s -1 -D
        sleep 0.3
        udp+=("$("$bin" exec --name "$name" h1 -- iperf3 -c h2 -u -l 64 -b 0 -w 4M -t "$SECONDS_RUN" -J |
            jq '(.end.sum.packets - .end.sum.lost_packets) / .end.sum.seconds / 1000')")
        "$bin" exec --name "$name" h2 -- iperf3 -s -1 -D
        sleep 0.3
        tcp+=("$("$bin" exec --name "$name" h1 -- iperf3 -c h2 -t "$SECONDS_RUN" -J |
            jq '.end.sum_received.bits_per_second / 1e9')")
    done
    "$bin" stop --name "$name" >/dev/null
    echo "$(median "${udp[@]}") $(median "${tcp[@]}")"
}

out=bench/results/kernel-$(date -u +%F).md
{
    echo "# Kernel routers against engine routers, $(date -u '+%F %H:%M') UTC"
    echo
    echo "source $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
    echo "command: HOPS=\"$HOPS\" DURATION=$SECONDS_RUN REPEAT=$REPEAT bench/live/kernel.sh"
    echo
    echo "| routers | kind | 64-byte UDP flat out, kpps received | TCP Gbit/s |"
    echo "|---:|---|---:|---:|"
    for n in $HOPS; do
        for kernel in false true; do
            read -r kpps gbps < <(measure "$n" "$kernel")
            kind=engine; [ "$kernel" = true ] && kind=kernel
            printf '| %d | %s | %.0f | %.2f |\n' "$n" "$kind" "$kpps" "$gbps"
        done
    done
} | tee "$out"
