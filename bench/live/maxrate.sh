#!/usr/bin/env bash
# The capacity prediction's maximum rate against a search for the real one (root): calibrates,
# predicts with `netloom check --capacity --precision sleep` the most one worker carries of one
# UDP flow h1 -> h2 through h1 - r1 - r2 - r3 - h2 (the chain of bench/live/capacity.sh, DELAY
# on each link), then offers RATES (packets/s) in turn with `udp-blast` (bench/src/bin, evenly
# paced, 1000-byte datagrams, on CPU 0; netloom on CPU 1) for SECONDS_RUN each, and counts what
# arrives at h2. A rate is carried when h2 receives 99 % of what h1 sent and h1 sent 97 % of the
# rate asked (else the sender, not netloom, was the limit); datagrams h2's socket dropped for
# want of buffer (RcvbufErrors, /proc/net/snmp in h2) are the receiver's loss, not netloom's,
# and are counted as delivered. Prints a Markdown table.
# docs/calibrate.md quotes it. Knobs: RATES ("100000 150000 200000 250000 300000"), SECONDS_RUN
# (3), DELAY (0us), NETLOOM_BIN and BLAST_BIN (default: this tree's release builds, built here).
set -euo pipefail
cd "$(dirname "$0")/../.."
RATES=${RATES:-100000 150000 200000 250000 300000}
SECONDS_RUN=${SECONDS_RUN:-3}
DELAY=${DELAY:-0us}
if [[ -z "${NETLOOM_BIN:-}" || -z "${BLAST_BIN:-}" ]]; then
    cargo build --release -p netloom -p netloom-bench --bin netloom --bin udp-blast >&2
    NETLOOM_BIN="${CARGO_TARGET_DIR:-target}/release/netloom"
    BLAST_BIN="${CARGO_TARGET_DIR:-target}/release/udp-blast"
fi
bin=$NETLOOM_BIN
blast=$(realpath "$BLAST_BIN")
name=maxrate$$
work=$(mktemp -d)
trap '"$bin" stop --name "$name" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
{
    echo 'hosts = ["h1", "h2"]'
    echo 'routers = ["r1", "r2", "r3"]'
    for pair in h1:r1 r1:r2 r2:r3 r3:h2; do
        printf '[[link]]\na = "%s"\nb = "%s"\nbw = "10Gbit"\ndelay = "%s"\nqueue = 1000\n' \
            "${pair%:*}" "${pair#*:}" "$DELAY"
    done
} >"$work/chain.toml"
"$bin" calibrate -o "$work/cal.json" >/dev/null 2>&1
predicted=$("$bin" check "$work/chain.toml" --capacity --calibration "$work/cal.json" \
    --precision sleep --load "pattern=pairs pairs=h1:h2 source=cbr rate=822400000bit size=1028" \
    --json | jq '.prediction.max_edge_packets_per_second')
"$bin" run "$work/chain.toml" --name "$name" --precision sleep --cpu 1 >/dev/null 2>"$work/run.err" &
until "$bin" exec --name "$name" h2 -- true 2>/dev/null; do sleep 0.1; done
h2=$("$bin" exec --name "$name" h2 -- ip -4 -o addr show nl0 | awk '{print $4}' | cut -d/ -f1)
echo "## Maximum rate: predicted against searched"
echo
echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); command: \`bench/live/maxrate.sh\` (RATES=\"$RATES\", DELAY=$DELAY, ${SECONDS_RUN} s each)"
printf -- '- predicted maximum, one worker, sleep precision: %.0f pps\n\n' "$predicted"
echo "| offered pps | sent pps | received pps | dropped by h2's socket | delivered | carried |"
echo "|---|---|---|---|---|---|"
rcvbuf_errors() {
    "$bin" exec --name "$name" h2 -- awk '/^Udp: [0-9]/ {print $6}' /proc/net/snmp
}
for pps in $RATES; do
    "$bin" exec --name "$name" h2 -- "$blast" recv 5001 "$SECONDS_RUN" >"$work/recv.json" &
    recv=$!
    sleep 0.3
    errors_before=$(rcvbuf_errors)
    "$bin" exec --name "$name" h1 -- taskset -c 0 "$blast" send "$h2:5001" "$pps" "$SECONDS_RUN" 1000 \
        >"$work/send.json"
    wait "$recv"
    errors=$(($(rcvbuf_errors) - errors_before))
    python3 - "$pps" "$work/send.json" "$work/recv.json" "$errors" <<'PY'
import json, sys
pps = float(sys.argv[1])
sent = json.load(open(sys.argv[2]))
received = json.load(open(sys.argv[3]))["received"]
dropped = float(sys.argv[4])
rate = sent["sent"] / sent["seconds"]
share = (received + dropped) / max(sent["sent"], 1)
carried = "yes" if share >= 0.99 and rate >= 0.97 * pps else ("sender-limited" if rate < 0.97 * pps else "no")
print(f"| {pps:.0f} | {rate:.0f} | {received / sent['seconds']:.0f} | {dropped:.0f} | {share * 100:.1f} % | {carried} |")
PY
done
echo
echo "- load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
