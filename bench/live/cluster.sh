#!/usr/bin/env bash
# What a run over two machines costs to start and stop (docs/performance.md, "A run over
# several machines"): two machines as network namespaces joined by a veth pair (as the tests of
# crates/netloom-cli/tests/live/live_cluster.rs make them), each worker started through `nsenter`;
# `run --detach --cluster` of a generated topology (METIS splits it), then each machine's worker
# process's resident memory (VmRSS, and its peak VmHWM) and the time `netloom stop` takes, for a
# large topology of few hosts (a chain of ROUTERS routers and 2 hosts: the worker's own copies of
# the topology show, not the hosts') and for a small one (the stop's own waits show). Needs root
# and nsenter; run it under the live tests' lock (flock /tmp/netloom-live.lock ...).
# Usage: bench/live/cluster.sh                              builds and measures target/release/netloom
#        NETLOOM_BIN=/path/netloom bench/live/cluster.sh     measures another build (an older revision)
#        REPEAT=5 ROUTERS=20000 bench/live/cluster.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${NETLOOM_BIN:-}"
if [ -z "$bin" ]; then
    cargo build --quiet --release -p netloom
    bin="${CARGO_TARGET_DIR:-target}/release/netloom"
fi
repeat="${REPEAT:-3}"
routers="${ROUTERS:-20000}"
tag="nlbc$$"
dir="$(mktemp -d)"
export NETLOOM_RUN_DIR="$dir/run"
cleanup() {
    for m in m1 m2; do "$bin" clean --name "$tag-$m" >/dev/null 2>&1 || true; done
    "$bin" clean --name "$tag" >/dev/null 2>&1 || true
    ip netns del "${tag}m1" 2>/dev/null || true
    ip netns del "${tag}m2" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

for k in 1 2; do
    ip netns add "${tag}m$k"
    ip -n "${tag}m$k" link set lo up
done
ip link add "${tag}v1" type veth peer name "${tag}v2"
for k in 1 2; do
    ip link set "${tag}v$k" netns "${tag}m$k"
    ip -n "${tag}m$k" addr add "10.252.0.$k/24" dev "${tag}v$k"
    ip -n "${tag}m$k" link set "${tag}v$k" up
done
for k in 1 2; do
    printf '[[machine]]\nname = "m%s"\naddress = "10.252.0.%s"\nnetloom = "%s"\nlauncher = ["nsenter", "--net=/run/netns/%sm%s", "--"]\n' \
        "$k" "$k" "$(realpath "$bin")" "$tag" "$k" >>"$dir/cluster.toml"
done

# "VmRSS VmHWM" (MB) of the netloom worker in machine namespace $1.
worker_memory() {
    for pid in $(ip netns pids "$1"); do
        if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(realpath "$bin")" ]; then
            awk '/^VmRSS|^VmHWM/ { kb[$1] = $2 } END { printf "%.1f %.1f\n", kb["VmRSS:"] / 1024, kb["VmHWM:"] / 1024 }' "/proc/$pid/status"
            return
        fi
    done
}

now() { date +%s.%N; }

echo "binary: $bin ($("$bin" --version)), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
echo
echo "| topology | run | start-up s | m1 worker RSS / peak MB | m2 worker RSS / peak MB | stop s |"
echo "|---|---|---|---|---|---|"
"$bin" gen chain --routers "$routers" -o "$dir/large.toml"
"$bin" gen star --hosts 4 -o "$dir/small.toml"
for topology in large small; do
    for run in $(seq "$repeat"); do
        t0=$(now)
        "$bin" run "$dir/$topology.toml" --cluster "$dir/cluster.toml" --name "$tag" --detach >/dev/null
        t1=$(now)
        m1=$(worker_memory "${tag}m1")
        m2=$(worker_memory "${tag}m2")
        t2=$(now)
        "$bin" stop --name "$tag" >/dev/null
        t3=$(now)
        printf '| %s | %s | %.2f | %s | %s | %.3f |\n' "$topology" "$run" "$(echo "$t1 - $t0" | bc -l)" \
            "${m1/ / \/ }" "${m2/ / \/ }" "$(echo "$t3 - $t2" | bc -l)"
    done
done
