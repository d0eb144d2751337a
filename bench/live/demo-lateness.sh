#!/usr/bin/env bash
# How late the demo's releases are, and why (docs/live.md, "Real-time priority"): the workload
# of `netloom demo` (examples/dumbbell.toml: ten pings from left1 to right2, then 5 s of iperf3
# TCP through the 10 Mbit/s bottleneck) run ROUNDS times with each binary in turn, printing per
# run the releases later than 100 us, the latest, and how often the scheduler took the CPU from
# the driver while it was runnable (`sched:sched_switch` with the driver's thread as prev in
# state R, recorded by perf): at normal priority (kernel priority 120) and at real-time priority
# (59, SCHED_FIFO 40). Taking the binaries in turn keeps the comparison fair on a VM whose
# load drifts. Needs root, perf, ping and iperf3.
#
#   bench/live/demo-lateness.sh ROUNDS BINARY...
#
# For example, this tree against an earlier revision built in a worktree:
#   flock /tmp/netloom-live.lock bench/live/demo-lateness.sh 10 /tmp/before/netloom target/release/netloom
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,14p' "$0"; exit 2; }
cd "$(dirname "$0")/../.."
rounds=$1
shift
name="demolate$$"
trace=$(mktemp /dev/shm/netloom-demo-lateness.XXXXXX)
perf_pid=""
current=""
cleanup() {
    [ -z "$perf_pid" ] || kill -INT "$perf_pid" 2>/dev/null || true
    [ -z "$current" ] || "$current" stop --name "$name" >/dev/null 2>&1 || true
    rm -f "$trace"
}
trap cleanup EXIT

# one BINARY: one run; prints its figures on one line.
one() {
    current=$1
    "$1" run examples/dumbbell.toml --detach --name "$name" >/dev/null
    perf record -q -a -e sched:sched_switch -o "$trace" 2>/dev/null &
    perf_pid=$!
    "$1" exec --name "$name" right2 -- iperf3 -s -1 >/dev/null 2>&1 &
    local server=$!
    sleep 0.3
    "$1" exec --name "$name" left1 -- ping -4 -q -c 10 right2 >/dev/null
    "$1" exec --name "$name" left1 -- iperf3 -c right2 -t 5 >/dev/null
    wait "$server" || true
    kill -INT "$perf_pid"
    wait "$perf_pid" 2>/dev/null || true
    perf_pid=""
    local switches normal realtime report
    switches=$(perf script -i "$trace" -F trace 2>/dev/null | grep 'prev_comm=netloom-worker' || true)
    normal=$(grep -c 'prev_prio=120 prev_state=R' <<<"$switches" || true)
    realtime=$(grep -c 'prev_prio=59 prev_state=R' <<<"$switches" || true)
    report=$("$1" stop --name "$name" 2>&1)
    current=""
    # "..., max 145.7 us; 4 later than 100.0 us; ..." and ACCURATE or INACCURATE
    local late latest verdict
    late=$(grep -o '[0-9]* later than' <<<"$report" | head -1 | cut -d' ' -f1)
    latest=$(grep -o 'max [0-9.]* us' <<<"$report" | head -1 | cut -d' ' -f2)
    verdict=$(grep -o 'INACCURATE\|ACCURATE' <<<"$report" | head -1)
    printf '%3s later than 100 us, latest %8s us, %-10s' "$late" "$latest" "$verdict"
    echo "; preempted at normal priority $normal, at real-time $realtime"
}

for round in $(seq "$rounds"); do
    for binary in "$@"; do
        echo "round $round, $binary: $(one "$binary")"
    done
done
