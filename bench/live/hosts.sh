#!/usr/bin/env bash
# What a live run costs per emulated host (docs/performance.md, "10,000 hosts"): for stars of
# N hosts (one router; each host has one link, so two pipes), `netloom run --detach` of a
# generated topology, and for each size:
#   - start-up: from the command to its return (every host up, the engine running);
#   - the engine process's RSS (VmRSS, VmHWM) and the kernel's memory from /proc/meminfo
#     (MemAvailable, Slab, SUnreclaim, Percpu) while it runs, against just before: per host and
#     per pipe;
#   - a ping from the first host to the last, through the engine;
#   - teardown: from `netloom stop` to nothing left (no namespace of the run in /run/netns, no
#     /etc/netns directory, no registry entry), and until the kernel has freed the namespaces
#     (it does so in the background after they are removed: net_namespace in /proc/slabinfo back
#     to within 20 of its count before the run); the next size starts only then.
# Needs root, ping. Run it under the live lock (the big runs disturb everyone's timing):
#   flock /tmp/netloom-live.lock bench/live/hosts.sh [N ...]     (default: 400 2000 5000 10000)
# NETLOOM_BIN=PATH (or NETLOOM=PATH) runs that binary instead of building this tree's (another
# revision, for a before and after). Hosts start with netloom's default TCP congestion control
# (cubic) unless TCP_CC=NAME says otherwise; when it is not the machine's, every host writes it
# (a sysctl write in its namespace, docs/performance.md, "10,000 hosts").
# Results go to stdout as Markdown; docs/performance.md quotes a run.
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib.sh
netloom=$(netloom_binary)
tcp_cc=${TCP_CC:-cubic}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(400 2000 5000 10000)
dir=$(mktemp -d /tmp/netloom-hosts-bench.XXXXXX)
name=""
cleanup() {
    [ -z "$name" ] || "$netloom" clean --name "$name" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT

# A /proc/meminfo field in kB.
meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
# Milliseconds since the epoch.
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Network namespaces the kernel holds, including removed ones it has not freed yet.
netns_objects() { awk '$1 == "net_namespace" { print $2 }' /proc/slabinfo; }
# What is left of experiment $1: namespaces, /etc/netns directories, the registry entry.
left() {
    local n
    n=$(find /run/netns /etc/netns -maxdepth 1 -name "nl-$1-*" 2>/dev/null | wc -l)
    [ -e "/run/netloom/$1" ] && n=$((n + 1))
    echo "$n"
}

echo "bench/live/hosts.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(( $(meminfo MemTotal) / 1024 )) MB," \
    "kernel $(uname -r), $("$netloom" --version), load $(cut -d' ' -f1-3 /proc/loadavg)," \
    "hosts' TCP congestion control $tcp_cc (the machine's: $(cat /proc/sys/net/ipv4/tcp_congestion_control))"
echo
echo "| hosts | pipes | start-up s | engine RSS MB (peak) | kernel MB (MemAvailable drop) | of which slab MB | ping first → last | stop s | left |"
echo "|---|---|---|---|---|---|---|---|---|"
per=()
settled=()
stop_cpu=()
for hosts in "${sizes[@]}"; do
    name="bench-hosts-$hosts"
    file="$dir/star-$hosts.toml"
    "$netloom" gen star --hosts "$hosts" -o "$file" 2>/dev/null
    pipes=$(( 2 * hosts ))
    sync
    avail0=$(meminfo MemAvailable) slab0=$(meminfo Slab) objects0=$(netns_objects)
    t0=$(now_ms)
    if ! "$netloom" run "$file" --name "$name" --detach --precision sleep --tcp-cc "$tcp_cc" >"$dir/run.out" 2>&1; then
        echo "| $hosts | $pipes | failed: $(tail -1 "$dir/run.out") | | | | | | |"
        "$netloom" clean --name "$name" >/dev/null 2>&1 || true
        continue
    fi
    t1=$(now_ms)
    pid=$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' "/run/netloom/$name/experiment.json" | head -1)
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
    avail1=$(meminfo MemAvailable) slab1=$(meminfo Slab)
    if "$netloom" exec --name "$name" h1 -- ping -c 3 -i 0.2 -q "h$hosts" >"$dir/ping.out" 2>&1; then
        ping="ok, $(sed -n 's|.*= [0-9.]*/\([0-9.]*\)/.*|\1|p' "$dir/ping.out") ms avg"
    else
        ping="FAILED: $(tail -1 "$dir/ping.out")"
    fi
    t2=$(now_ms)
    # The stop command's own CPU (it waits for the owner's teardown), in ms.
    cpu0=$(awk '{ print $14 + $15 + $16 + $17 }' /proc/$$/stat)
    "$netloom" stop --name "$name" >/dev/null
    cpu1=$(awk '{ print $14 + $15 + $16 + $17 }' /proc/$$/stat)
    while [ "$(left "$name")" -gt 0 ] && [ $(( $(now_ms) - t2 )) -lt 600000 ]; do sleep 0.05; done
    t3=$(now_ms)
    kernel=$(( avail0 - avail1 ))
    slab=$(( slab1 - slab0 ))
    echo "| $hosts | $pipes | $(awk -v ms=$((t1 - t0)) 'BEGIN { printf "%.2f", ms / 1000 }') |" \
        "$((rss / 1024)) ($((hwm / 1024))) | $((kernel / 1024)) | $((slab / 1024)) | $ping |" \
        "$(awk -v ms=$((t3 - t2)) 'BEGIN { printf "%.2f", ms / 1000 }') | $(left "$name") |"
    per+=("$hosts $rss $kernel $slab $((t1 - t0)) $((t3 - t2))")
    stop_cpu+=("- $hosts hosts: \`netloom stop\` used $(( (cpu1 - cpu0) * 1000 / $(getconf CLK_TCK) )) ms of CPU")
    # Other programs may hold a few namespaces more meanwhile. The kernel frees a removed
    # namespace's last part only when it cleans up a later one (on 6.18, 7,800 stayed for
    # minutes, then went within seconds of an `unshare --net true`), so a throwaway namespace
    # is made and dropped each second; otherwise the wait would be for another program's.
    while [ "$(netns_objects)" -gt $((objects0 + 20)) ] && [ $(( $(now_ms) - t3 )) -lt 900000 ]; do
        unshare --net true
        sleep 1
    done
    settled+=("- $hosts hosts: the kernel had freed them $(( ($(now_ms) - t3) / 1000 )) s after the stop")
    name=""
    rm -f "$file"
done
echo
echo "Per host (each host has 2 pipes), largest run against smallest (the difference divided by the"
echo "difference in hosts, so what every run has whatever its size drops out):"
echo
if [ ${#per[@]} -ge 2 ]; then
    read -r h0 r0 k0 s0 u0 d0 <<<"${per[0]}"
    read -r h1 r1 k1 s1 u1 d1 <<<"${per[${#per[@]}-1]}"
    awk -v dh=$((h1 - h0)) -v r=$((r1 - r0)) -v k=$((k1 - k0)) -v s=$((s1 - s0)) -v u=$((u1 - u0)) -v d=$((d1 - d0)) 'BEGIN {
        printf "- engine RSS: %.1f KB per host (%.1f KB per pipe if it were all pipes)\n", r / dh, r / dh / 2
        printf "- kernel: %.1f KB per host (MemAvailable), of which slab %.1f KB\n", k / dh, s / dh
        printf "- start-up: %.2f ms per host; stop: %.2f ms per host\n", u / dh, d / dh
    }'
fi
echo
echo "The stop command's own CPU while it waited for the teardown (user and system, its children's):"
echo
printf '%s\n' "${stop_cpu[@]}"
echo
echo "Freeing the namespaces, which the kernel does in the background after the stop (net_namespace"
echo "objects in /proc/slabinfo back to within 20 of the count before the run; the next size starts"
echo "only then):"
echo
printf '%s\n' "${settled[@]}"
