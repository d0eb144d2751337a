#!/usr/bin/env bash
# What CPU `netloom run` spends on a light load, and what that buys (root): the netloom
# process's CPU time (utime + stime of /proc/PID/stat, every thread, over a measured window)
# beside the run's accuracy verdict, its release lateness and what the application got.
#
#   bench/live/idle-cpu.sh [BINARY...]
#
# A BINARY may carry flags for `netloom run` in the same word, split as a shell splits words:
# 'target/release/netloom --linger 0us' measures what the linger costs.
# Cases (CASES, all by default), each on two hosts h1 and h2:
#   idle    nothing runs: what the emulator costs by itself;
#   5mbit   a 5 Mbit/s link, 10 ms each way, an iperf3 TCP download (h2 sends to h1, -R);
#   20mbit  the same at 20 Mbit/s;
#   trace   a cellular trace link (Mahimahi format, generated here: 5 to 17 Mbit/s in 500 ms
#           steps, mean 11 Mbit/s, both directions, 20 ms each way), the same download;
#   rtt     a 100 Gbit/s link of zero delay: sockperf ping-pong (UDP, 1000 a second) and ping
#           (ICMP, 20 ms and 2 ms apart): the round trip, where lingering after packets matters.
# With several binaries (say a before and an after), every case runs each binary in turn, RUNS
# times, so that the machine's drift hits all alike; figures are medians over the runs (round
# trips: percentiles of all samples pooled, and pair by pair: each run's medians, their median
# over the runs, and the median of each run's difference from binary 0's run of the same round).
# Without a binary: this tree's release build.
#
# Knobs: RUNS (3), SECONDS_RUN (10: the measured window; iperf3 runs 1 s longer and leaves the
# first second out, the window starts after it), CASES, PRECISION (hybrid), PIN (0; 1 puts netloom
# on CPU 1 with --cpu 1 and the programs on CPU 0). CPU is per process, so it mostly holds on a
# shared machine; lateness and round trips do not: compare binaries of one run only. Writes
# bench/results/idle-cpu-<UTC date>[-HHMM].md and prints it. Needs iperf3, sockperf, ping, jq,
# python3. Serialise with other live benchmarks: flock /tmp/netloom-live.lock bench/live/idle-cpu.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
source bench/lib.sh
RUNS=${RUNS:-3}
SECONDS_RUN=${SECONDS_RUN:-10}
CASES=${CASES:-idle 5mbit 20mbit trace rtt}
PRECISION=${PRECISION:-hybrid}
PIN=${PIN:-0}
PING_COUNT=${PING_COUNT:-200}

[ "$(id -u)" = 0 ] || { echo "bench/live/idle-cpu.sh needs root (namespaces, TUN)" >&2; exit 2; }
for tool in iperf3 sockperf ping jq python3; do
    command -v "$tool" >/dev/null || { echo "bench/live/idle-cpu.sh needs $tool" >&2; exit 2; }
done
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=("$(netloom_binary)")

work=$(mktemp -d)
export NETLOOM_RUN_DIR="$work/run"
NAME=icpu
EMU_PID=""   # the netloom run in progress
BIN=""       # its binary
cleanup() {
    if [ -n "$EMU_PID" ]; then
        kill "$EMU_PID" 2>/dev/null || true
        wait "$EMU_PID" 2>/dev/null || true
    fi
    [ -z "$BIN" ] || "$BIN" clean >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

H2=198.18.0.2 # h2's IPv4 address in the address plan (docs/live.md)
pin=()
[ "$PIN" = 1 ] && pin=(taskset -c 0)
x() { "$BIN" exec --name "$NAME" "$1" -- "${pin[@]}" "${@:2}"; }

# The cellular trace: one line per 1500-byte delivery opportunity (docs/wireless.md), the rate
# stepping every 500 ms through a fixed order of 5 to 17 Mbit/s (r/12 opportunities a
# millisecond at r Mbit/s), 10 s before it loops.
awk 'BEGIN {
    split("5 9 13 17 11 7 15 6 12 16 8 14 10 17 5 9 13 11 7 15", rate, " ");
    acc = 0;
    for (t = 0; t < 10000; t++) {
        acc += rate[int(t / 500) + 1] / 12;
        while (acc >= 1) { print t; acc -= 1 }
    }
}' >"$work/cell.trace"

topology() { # topology CASE: the case's topology file
    local f=$work/$1.toml
    printf 'hosts = ["h1", "h2"]\n[[link]]\na = "h1"\nb = "h2"\n' >"$f"
    case $1 in
    idle | 5mbit) printf 'bw = "5Mbit"\ndelay = "10ms"\n' >>"$f" ;;
    20mbit) printf 'bw = "20Mbit"\ndelay = "10ms"\n' >>"$f" ;;
    trace) printf 'trace = "cell.trace"\ndelay = "20ms"\n' >>"$f" ;;
    rtt) printf 'bw = "100Gbit"\ndelay = "0us"\nqueue = 1000\n' >>"$f" ;;
    *) echo "unknown case $1 (idle 5mbit 20mbit trace rtt)" >&2; exit 2 ;;
    esac
    echo "$f"
}

start() { # start "BINARY [FLAGS...]" CASE: the run, up
    local words
    read -r -a words <<<"$1"
    BIN=${words[0]}
    local flags=("${words[@]:1}")
    [[ " ${flags[*]} " == *" --precision "* ]] || flags+=(--precision "$PRECISION")
    [ "$PIN" = 1 ] && flags+=(--cpu 1)
    "$BIN" run --name "$NAME" --json "${flags[@]}" "$(topology "$2")" \
        >"$work/report.json" 2>"$work/run.err" &
    EMU_PID=$!
    for _ in $(seq 200); do
        "$BIN" exec --name "$NAME" h1 -- true 2>/dev/null && return 0
        kill -0 "$EMU_PID" 2>/dev/null || { cat "$work/run.err" >&2; exit 1; }
        sleep 0.05
    done
    echo "experiment not up" >&2; exit 1
}
stop() {
    kill -TERM "$EMU_PID"
    wait "$EMU_PID" || true
    EMU_PID=""
}

# ticks PID: CPU time of the process so far (every thread, live or ended), clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# switches PID: voluntary context switches of its live threads: how often they slept.
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ {s += $2} END {print s}'; }
hz=$(getconf CLK_TCK)

# measure: the window, from now: prints "cpu sleeps_per_s"
measure() {
    local t0 s0 w0 t1 s1 w1
    t0=$(ticks "$EMU_PID"); s0=$(switches "$EMU_PID"); w0=$(date +%s.%N)
    sleep "$SECONDS_RUN"
    t1=$(ticks "$EMU_PID"); s1=$(switches "$EMU_PID"); w1=$(date +%s.%N)
    awk -v t="$((t1 - t0))" -v s="$((s1 - s0))" -v w="$(echo "$w1 - $w0" | bc -l)" -v hz="$hz" \
        'BEGIN {printf "%.4f %.0f\n", t / hz / w, s / w}'
}

one() { # one BINARY CASE TAG: one run; appends "cpu sleeps verdict p50 p99 p999 late released mbit" to $work/TAG-CASE
    local bin=$1 case=$2 tag=$3 figures mbit=-
    start "$bin" "$case"
    case $case in
    idle)
        sleep 1
        figures=$(measure)
        ;;
    5mbit | 20mbit | trace)
        x h2 iperf3 -s -1 >/dev/null 2>&1 &
        local server=$!
        sleep 0.3
        x h1 iperf3 -c "$H2" -R -O 1 -t "$((SECONDS_RUN + 1))" -J >"$work/iperf.json" 2>&1 &
        local client=$!
        sleep 1
        figures=$(measure)
        wait "$client" || true
        wait "$server" || true
        mbit=$(jq '.end.sum_received.bits_per_second / 1e6 | . * 100 | round / 100' "$work/iperf.json")
        ;;
    rtt)
        x h2 sockperf sr -i "$H2" -p 11111 >/dev/null 2>&1 &
        local server=$!
        sleep 0.3
        x h1 ping -c 3 -i 0.01 "$H2" >/dev/null 2>&1 || true
        local t0 w0
        t0=$(ticks "$EMU_PID"); w0=$(date +%s.%N)
        x h1 sockperf pp -i "$H2" -p 11111 -t 5 --mps 1000 --full-rtt \
            --full-log "$work/$tag-sp-r$RUN.csv" >/dev/null 2>&1 || true
        x h1 ping -c "$PING_COUNT" -i 0.02 "$H2" >"$work/$tag-p20-r$RUN.txt" 2>&1 || true
        x h1 ping -c "$PING_COUNT" -i 0.002 "$H2" >"$work/$tag-p2-r$RUN.txt" 2>&1 || true
        figures=$(awk -v t="$(($(ticks "$EMU_PID") - t0))" -v w="$(echo "$(date +%s.%N) - $w0" | bc -l)" \
            -v hz="$hz" 'BEGIN {printf "%.4f -\n", t / hz / w}')
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
        ;;
    esac
    stop
    echo "$figures $(jq -r '.accuracy | "\(if .accurate then "ACCURATE" else "INACCURATE" end) \(.lateness_ns_p50 / 1000) \(.lateness_ns_p99 / 1000) \(.lateness_ns_p999 / 1000) \(.late) \(.released)"' "$work/report.json") $mbit" \
        >>"$work/$tag-$case"
}

median() { # median COLUMN FILE
    awk -v c="$1" '{print $c}' "$2" | grep -v '^-$' | sort -g |
        awk '{v[NR] = $1} END {if (NR == 0) print "-"; else print v[int((NR + 1) / 2)]}'
}

for case in $CASES; do
    for run in $(seq "$RUNS"); do
        RUN=$run
        for i in "${!binaries[@]}"; do
            one "${binaries[$i]}" "$case" "b$i"
            echo "$case run $run binary $i: $(tail -1 "$work/b$i-$case")" >&2
        done
    done
done

# --- report ------------------------------------------------------------------------------------------
out=bench/results/idle-cpu-$(date -u +%F).md
[ -e "$out" ] && out=bench/results/idle-cpu-$(date -u +%F-%H%M).md
{
    echo "# What CPU a light load costs netloom"
    echo
    echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') ($(nproc) vCPUs), kernel $(uname -r)"
    echo "- source: $(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown) (the benchmark)"
    for i in "${!binaries[@]}"; do echo "- binary $i: ${binaries[$i]}"; done
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- command: \`bench/live/idle-cpu.sh\` (RUNS=$RUNS SECONDS_RUN=$SECONDS_RUN CASES=\"$CASES\" PRECISION=$PRECISION PIN=$PIN), binaries in turn"
    echo
    echo "CPU: the netloom process's utime + stime over the window ($SECONDS_RUN s; rtt: the whole"
    echo "ping-pong and pings), in CPUs; sleeps/s: its threads' voluntary context switches a second."
    echo "Lateness (µs) and the verdict cover the whole run. Medians of $RUNS runs."
    echo
    echo "| case | binary | CPU | sleeps/s | verdicts | lateness p50 / p99 / p99.9 µs | late / released | Mbit/s |"
    echo "|---|---|---:|---:|---|---|---|---:|"
    for case in $CASES; do
        for i in "${!binaries[@]}"; do
            f=$work/b$i-$case
            verdicts=$(awk '{print $3}' "$f" | sort | uniq -c | awk '{printf "%s%s ×%s", (NR > 1 ? ", " : ""), $2, $1}')
            echo "| $case | $i | $(median 1 "$f") | $(median 2 "$f") | $verdicts | $(median 4 "$f") / $(median 5 "$f") / $(median 6 "$f") | $(median 7 "$f") / $(median 8 "$f") | $(median 9 "$f") |"
        done
    done
    if [[ " $CASES " == *" rtt "* ]]; then
        echo
        echo "Round trip at zero delay, every run's samples pooled, µs p50 / p99: sockperf ping-pong"
        echo "(5 s, 1000 a second), ping $PING_COUNT echoes 20 ms and 2 ms apart."
        echo
        echo "| binary | sockperf | ping 20 ms | ping 2 ms |"
        echo "|---|---|---|---|"
        for i in "${!binaries[@]}"; do
            row="| $i |"
            for tool in sp p20 p2; do
                kind=ping
                [ "$tool" = sp ] && kind=rtt
                # shellcheck disable=SC2086 # one file per run
                read -r _ p50 p99 _ < <(python3 bench/live/stats.py $kind "$work"/b$i-$tool-*)
                row="$row $p50 / $p99 |"
            done
            echo "$row"
        done
        echo
        echo "The same pair by pair: each run's median (µs) per binary, the median over the runs, and"
        echo "the median of each run's difference from binary 0 (runs of one round are minutes apart"
        echo "at most, so the machine's drift hits both alike)."
        echo
        echo "| binary | sockperf p50 by run | median | − binary 0 | ping 20 ms | median | − binary 0 | ping 2 ms | median | − binary 0 |"
        echo "|---|---|---:|---:|---|---:|---:|---|---:|---:|"
        for i in "${!binaries[@]}"; do
            row="| $i |"
            for tool in sp p20 p2; do
                kind=ping
                [ "$tool" = sp ] && kind=rtt
                runs="" diffs=""
                for run in $(seq "$RUNS"); do
                    read -r _ p50 _ _ < <(python3 bench/live/stats.py $kind "$work"/b$i-$tool-r$run.*)
                    read -r _ b50 _ _ < <(python3 bench/live/stats.py $kind "$work"/b0-$tool-r$run.*)
                    runs="$runs $p50"
                    diffs="$diffs $(echo "$p50 - $b50" | bc -l)"
                done
                # shellcheck disable=SC2086 # one number a word
                row="$row${runs} | $(printf '%s\n' $runs | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}') | $(printf '%s\n' $diffs | sort -g | awk '{v[NR] = $1} END {printf "%+.1f", v[int((NR + 1) / 2)]}') |"
            done
            echo "$row"
        done
    fi
} >"$out"
cat "$out"
