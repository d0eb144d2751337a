#!/usr/bin/env bash
# What reading a live run over HTTP costs it (root): a saturated run (two hosts, a 100 Mbit/s link
# of 1 ms, iperf3 TCP flat out from h1 to h2, netloom pinned to CPU 1 and the programs to CPU 0)
# in four modes, REPEAT times each, alternating: nothing reads it; Prometheus' scrape of
# /metrics SCRAPE_HZ times a second (10: 150 times Prometheus' default of one per 15 s); the web
# view's poll of /api/stats once a second, as an open page does; and PAGES pages at once. Reports
# the run's lateness (its --json report) and iperf3's throughput per mode, and how long a scrape
# and a poll took (curl's time_total) and how large they were. Writes
# bench/results/web-<UTC date>.md and prints it. Knobs: SECONDS_RUN (10), REPEAT (3),
# SCRAPE_HZ (10), PAGES (10), PRECISION (hybrid), NETLOOM_BIN (default: build release).
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_RUN=${SECONDS_RUN:-10}
REPEAT=${REPEAT:-3}
SCRAPE_HZ=${SCRAPE_HZ:-10}
PAGES=${PAGES:-10}
PRECISION=${PRECISION:-hybrid}
[ "$(id -u)" = 0 ] || { echo "bench/live/web.sh needs root (namespaces, TUN)" >&2; exit 2; }
for tool in iperf3 curl jq taskset; do
    command -v "$tool" >/dev/null || { echo "bench/live/web.sh needs $tool" >&2; exit 2; }
done
source bench/lib.sh
netloom=$(netloom_binary)
work=$(mktemp -d)
EXP=benchweb
PORT=19464
cleanup() { "$netloom" clean --name "$EXP" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
printf 'hosts = ["h1", "h2"]\n[[link]]\na = "h1"\nb = "h2"\nbw = "100Mbit"\ndelay = "1ms"\nqueue = 1000\n' \
    >"$work/topo.toml"
x() { # x HOST COMMAND...: runs COMMAND in HOST, on CPU 0
    local host=$1
    shift
    taskset -c 0 "$netloom" exec --name "$EXP" "$host" -- "$@"
}

reader() { # reader MODE: reads the run as MODE does until killed, logging curl's time and size
    local url=http://127.0.0.1:$PORT
    case $1 in
    scrape) while :; do curl -s -o /dev/null -w '%{time_total} %{size_download}\n' "$url/metrics"; sleep "$(echo "1 / $SCRAPE_HZ" | bc -l)"; done ;;
    page) while :; do curl -s -o /dev/null -w '%{time_total} %{size_download}\n' "$url/api/stats"; sleep 1; done ;;
    esac
}

run_mode() { # run_mode MODE: one saturated run; appends "mode p50 p99 p999 max late released gbps"
    local mode=$1 readers=()
    taskset -c 1 "$netloom" run --name "$EXP" --json --precision "$PRECISION" --cpu 1 \
        --metrics "127.0.0.1:$PORT" --web "127.0.0.1:$PORT" "$work/topo.toml" \
        >"$work/report.json" 2>"$work/run.err" &
    local pid=$!
    until x h1 true 2>/dev/null; do
        kill -0 "$pid" 2>/dev/null || { cat "$work/run.err" >&2; exit 1; }
        sleep 0.05
    done
    x h2 iperf3 -s -1 -D
    sleep 0.3
    case $mode in
    scrape) taskset -c 0 bash -c "$(declare -f reader); PORT=$PORT SCRAPE_HZ=$SCRAPE_HZ reader scrape" >>"$work/scrape.log" & readers+=($!) ;;
    page) taskset -c 0 bash -c "$(declare -f reader); PORT=$PORT reader page" >>"$work/page.log" & readers+=($!) ;;
    pages) for _ in $(seq "$PAGES"); do
            taskset -c 0 bash -c "$(declare -f reader); PORT=$PORT reader page" >>"$work/pages.log" & readers+=($!)
        done ;;
    esac
    local gbps
    gbps=$(x h1 iperf3 -c 198.18.0.2 -t "$SECONDS_RUN" -J | jq '.end.sum_received.bits_per_second / 1e9')
    for r in "${readers[@]}"; do kill "$r"; wait "$r" 2>/dev/null || true; done
    kill -TERM "$pid"; wait "$pid" || true
    jq -r --arg mode "$mode" --arg gbps "$gbps" \
        '.accuracy | "\($mode) \(.lateness_ns_p50) \(.lateness_ns_p99) \(.lateness_ns_p999) \(.lateness_ns_max) \(.late) \(.released) \($gbps)"' \
        "$work/report.json" >>"$work/runs.txt"
}

MODES="none scrape page pages"
for _ in $(seq "$REPEAT"); do
    for mode in $MODES; do run_mode "$mode"; done
done

out=bench/results/web-$(date -u +%F).md
{
    echo "# What reading a live run over HTTP costs it"
    echo
    echo "$(date -u '+%F %H:%M') UTC, source $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) vCPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "command: SECONDS_RUN=$SECONDS_RUN REPEAT=$REPEAT SCRAPE_HZ=$SCRAPE_HZ PAGES=$PAGES PRECISION=$PRECISION bench/live/web.sh"
    echo
    echo "Median of $REPEAT runs per mode (lateness in us; late = released later than 100 us):"
    echo
    echo "| mode | lateness p50 | p99 | p99.9 | max | late / released | iperf3 TCP Gbit/s |"
    echo "|---|---|---|---|---|---|---|"
    python3 - "$work" $MODES <<'PY'
import sys
work, modes = sys.argv[1], sys.argv[2:]
median = lambda v: sorted(v)[(len(v) - 1) // 2]
runs = [l.split() for l in open(f"{work}/runs.txt")]
for mode in modes:
    rows = [[float(x) for x in r[1:]] for r in runs if r[0] == mode]
    m = [median([r[i] for r in rows]) for i in range(7)]
    print(f"| {mode} | {m[0]/1e3:.1f} | {m[1]/1e3:.1f} | {m[2]/1e3:.1f} | {m[3]/1e3:.1f} "
          f"| {m[4]:.0f} / {m[5]:.0f} | {m[6]:.2f} |")
print()
print("| request | count | median time, ms | p99 time, ms | size, bytes |")
print("|---|---|---|---|---|")
for log in ["scrape", "page", "pages"]:
    try:
        rows = [l.split() for l in open(f"{work}/{log}.log") if l.strip()]
    except FileNotFoundError:
        continue
    t = sorted(float(r[0]) for r in rows)
    p99 = t[min(len(t) - 1, int(len(t) * 0.99))]
    print(f"| {log} | {len(t)} | {median(t)*1e3:.2f} | {p99*1e3:.2f} | {rows[-1][1]} |")
PY
} >"$out"
cat "$out"
