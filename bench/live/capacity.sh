#!/usr/bin/env bash
# The capacity prediction against measured runs (root): calibrates this machine, then for each
# load of LOADS (packets/s) predicts with `netloom check --capacity` and measures a live run of
# the same load: `iperf3 -u` from h1 to h2 through h1 - r1 - r2 - r3 - h2 (4 hops, 10 Gbit/s,
# DELAY each), 1000-byte datagrams (1028-byte IP packets), netloom on CPU 1, iperf3 on CPU 0.
# Measured: netloom's CPU (utime + stime of the process over the iperf3 window, /proc), the
# packets iperf3 sent, and its lateness percentiles (run --json). The measured maximum is the
# load over the measured CPU share (the rate at which the same work per packet would fill one
# CPU). Prints a Markdown table of predicted against measured, with what the first model (no
# wake-ups, every packet at the MTU's TUN cost, the idle timer's lateness added to every
# delivery) predicted from the same calibration. docs/calibrate.md quotes it.
#
# Knobs: LOADS ("10000 40000 100000"), SECONDS_RUN (5), DELAY (0us: every deadline falls in the
# turn that read the packet, so no timer is involved; 1ms: each release waits for one), PRECISION (sleep: its CPU is the work
# done; busy and hybrid spin by design, so their CPU says nothing of the load), PACING (1000:
# iperf3's --pacing-timer in us; its default sends a burst each millisecond, 10 packets at
# 10 kpps, where the model assumes packets spread at random; 10 spreads them), NETLOOM_BIN (a
# netloom binary; default: this tree's release build, built here).
set -euo pipefail
cd "$(dirname "$0")/../.."
LOADS=${LOADS:-10000 40000 100000}
SECONDS_RUN=${SECONDS_RUN:-5}
PRECISION=${PRECISION:-sleep}
DELAY=${DELAY:-0us}
PACING=${PACING:-1000}
source bench/lib.sh
bin=$(netloom_binary)
name=capacity$$
work=$(mktemp -d)
trap '"$bin" stop --name "$name" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
cat >"$work/chain.toml" <<EOF
hosts = ["h1", "h2"]
routers = ["r1", "r2", "r3"]
[[link]]
a = "h1"
b = "r1"
bw = "10Gbit"
delay = "$DELAY"
queue = 1000
[[link]]
a = "r1"
b = "r2"
bw = "10Gbit"
delay = "$DELAY"
queue = 1000
[[link]]
a = "r2"
b = "r3"
bw = "10Gbit"
delay = "$DELAY"
queue = 1000
[[link]]
a = "r3"
b = "h2"
bw = "10Gbit"
delay = "$DELAY"
queue = 1000
EOF
"$bin" calibrate -o "$work/cal.json" >"$work/calibrate.txt"
ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# Sleeps of all of netloom's threads so far: each voluntary context switch is one wait that
# slept, hence one wake-up.
sleeps() { cat /proc/"$1"/task/*/status | awk '/^voluntary_ctxt_switches/ {n += $2} END {print n}'; }
echo "## The capacity prediction against measured runs"
echo
echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); command: \`bench/live/capacity.sh\` (LOADS=\"$LOADS\", PRECISION=$PRECISION, DELAY=$DELAY, PACING=$PACING, ${SECONDS_RUN} s each)"
echo "- calibration: $(jq -c '{hop_ns: .engine.ns_per_packet_hop, read_ns: .tun[0].read.ns_per_packet, write_ns: .tun[0].write.ns_per_packet, handoff_ns: .handoff.ns_per_handoff, timer: (.timer[] | select(.precision == "'"$PRECISION"'") | {p50_ns, p99_ns, wake_up_ns})}' "$work/cal.json")"
echo
echo "| offered pps | sent pps | CPU first model / now / measured | wake-ups/s predicted / measured | max pps predicted / extrapolated | lateness p50 first / now / measured (us) | p99 first / now / measured (us) |"
echo "|---|---|---|---|---|---|---|"
for pps in $LOADS; do
    bps=$((pps * 1028 * 8))
    "$bin" check "$work/chain.toml" --capacity --calibration "$work/cal.json" --precision "$PRECISION" \
        --load "pattern=pairs pairs=h1:h2 source=cbr rate=${bps}bit size=1028" --json >"$work/predicted.json"
    "$bin" run "$work/chain.toml" --name "$name" --precision "$PRECISION" --cpu 1 --json \
        >"$work/report.json" 2>"$work/run.err" &
    run=$!
    until "$bin" exec --name "$name" h2 -- true 2>/dev/null; do sleep 0.1; done
    h2=$("$bin" exec --name "$name" h2 -- ip -4 -o addr show nl0 | awk '{print $4}' | cut -d/ -f1)
    "$bin" exec --name "$name" h2 -- iperf3 -s -1 -D
    sleep 0.3
    before=$(cpu_ticks "$run")
    slept_before=$(sleeps "$run")
    start=$(date +%s.%N)
    "$bin" exec --name "$name" h1 -- taskset -c 0 iperf3 -u -c "$h2" -l 1000 -b $((pps * 8000)) \
        -t "$SECONDS_RUN" --pacing-timer "$PACING" -J >"$work/iperf.json"
    after=$(cpu_ticks "$run")
    slept_after=$(sleeps "$run")
    end=$(date +%s.%N)
    "$bin" stop --name "$name" >/dev/null
    wait "$run" || true
    read -r sent <<<"$(jq '.end.sum.packets // 0' "$work/iperf.json")"
    python3 - "$work/predicted.json" "$work/report.json" "$before" "$after" "$start" "$end" "$ticks" "$pps" "$sent" "$SECONDS_RUN" "$work/cal.json" "$PRECISION" "$((slept_after - slept_before))" <<'PY'
import json, math, sys
pred = json.load(open(sys.argv[1]))["prediction"]
report = json.load(open(sys.argv[2]))
before, after, start, end, ticks = map(float, sys.argv[3:8])
pps, sent, seconds = float(sys.argv[8]), float(sys.argv[9]), float(sys.argv[10])
cal, precision, slept = json.load(open(sys.argv[11])), sys.argv[12], float(sys.argv[13])
w = pred["per_worker"][0]
cpu = (after - before) / ticks / (end - start)
acc = report["accuracy"]
sent_pps = sent / seconds
# The first model: per packet, its hops, an MTU-bound read and write; lateness = the idle
# timer's plus M/D/1's mean wait (p50) or M/M/1's p99 wait.
tun = next(t for t in cal["tun"] if not t["gso"])
timer = next(t for t in cal["timer"] if t["precision"] == precision)
rho = pps * (pred["path_length"] * cal["engine"]["ns_per_packet_hop"]
             + tun["read"]["ns_per_packet"] + tun["write"]["ns_per_packet"]) / 1e9
s = rho / pps * 1e9
first_p50 = timer["p50_ns"] + rho * s / (2 * (1 - rho))
first_p99 = timer["p99_ns"] + max(0.0, s * math.log(100 * rho) / (1 - rho))
us = lambda ns: "-" if ns is None else f"{ns / 1e3:.1f}"
print(f"| {pps:.0f} | {sent_pps:.0f} | {rho * 100:.1f} / {w['utilization'] * 100:.1f} / {cpu * 100:.1f} % "
      f"| {w['wake_ups_per_second'] / 1e3:.1f} k / {slept / (end - start) / 1e3:.1f} k "
      f"| {pred['max_edge_packets_per_second'] / 1e3:.0f} k / {sent_pps / max(cpu, 1e-9) / 1e3:.0f} k "
      f"| {us(first_p50)} / {us(w['lateness_p50_ns'])} / {us(acc['lateness_ns_p50'])} "
      f"| {us(first_p99)} / {us(w['lateness_p99_ns'])} / {us(acc['lateness_ns_p99'])} |")
PY
done
echo
echo "- load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
