#!/usr/bin/env bash
# Does one tenant's request delay another tenant's packets in `netloom shape`? In a network
# namespace of its own (its own daemon, rules and queue), root's link `server 7101 OUT
# delay=1ms` carries a probe: a UDP packet every 2 ms, each carrying its send time, whose one-way
# delay is taken at the receiver. The probe runs 2 s quiet, then 15 s during which, from 1 s in,
# a request of 180,000 iptables rules (`client 1,...,300@300 addresses OUT delay=1ms`, about 4
# KB; root's, so no limit refuses it) is made and then deleted. Root's probe link comes first,
# so its packets never scan the large rule set: what shows is the installation. Prints p50,
# p99 and maximum delay of each part, and how long the request and the delete took.
# Needs root, iptables-legacy, iproute2, python3. Run it under the live lock:
#   flock /tmp/netloom-live.lock bench/shape-stall.sh
# NETLOOM=path measures another build (say, an earlier commit's, to compare).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
if [ -z "${NETLOOM:-}" ]; then
    cargo build --release -q -p netloom --bin netloom
fi
netloom=${NETLOOM:-$target/release/netloom}
export NETLOOM_RUN_DIR=$(mktemp -d /tmp/netloom-shape-stall.XXXXXX)
ns=netloom-shape-stall-$$
cleanup() {
    [ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "$NETLOOM_RUN_DIR"
}
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
"$netloom" shape --netns "$ns" daemon 2>"$NETLOOM_RUN_DIR/daemon.log" &
daemon=$!
for _ in $(seq 300); do
    ls "$NETLOOM_RUN_DIR"/*.sock >/dev/null 2>&1 && break
    sleep 0.01
done
"$netloom" shape --netns "$ns" server 7101 OUT delay=1ms >/dev/null

probe() { # count: prints "p50 p99 max received"
    ip netns exec "$ns" python3 -c '
import socket, sys, time, struct, select
n, gap = int(sys.argv[1]), 0.002
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); r.bind(("127.0.0.1", 7102)); r.setblocking(False)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 7101))
d = []
def drain():
    while True:
        try: m = r.recv(64)
        except BlockingIOError: return
        d.append((time.monotonic_ns() - struct.unpack("q", m[:8])[0]) / 1e6)
t0 = time.monotonic()
for i in range(n):
    s.sendto(struct.pack("q", time.monotonic_ns()), ("127.0.0.1", 7102))
    end = t0 + (i + 1) * gap
    while True:
        drain(); left = end - time.monotonic()
        if left <= 0: break
        select.select([r], [], [], left)
stop = time.monotonic() + 2
while len(d) < n and time.monotonic() < stop:
    select.select([r], [], [], 0.05); drain()
d.sort(); got = len(d); d = d or [-1.0]
print("%.2f %.2f %.2f %d/%d" % (d[len(d)//2], d[max(0, int(len(d)*0.99)-1)], d[-1], got, n))
' "$1"
}

ports=$(seq -s, 1 300)
peers=$(for i in $(seq 0 299); do printf '10.9.%d.%d,' $((i / 250)) $((i % 250 + 1)); done)
peers=${peers%,}

quiet=$(probe 1000)
probe 7500 >"$NETLOOM_RUN_DIR/busy" &
prober=$!
sleep 1
t0=$(date +%s.%N)
"$netloom" shape --netns "$ns" client "$ports@$peers" OUT delay=1ms >/dev/null
t1=$(date +%s.%N)
"$netloom" shape --netns "$ns" delete client "$ports@$peers" >/dev/null
t2=$(date +%s.%N)
wait "$prober"
busy=$(cat "$NETLOOM_RUN_DIR/busy")

echo "| root's 1 ms pipe | p50 ms | p99 ms | max ms | received |"
echo "|---|---:|---:|---:|---:|"
echo "| quiet (2 s) | $(echo "$quiet" | tr ' ' '|' | sed 's/|/ | /g') |"
echo "| 15 s: a 180,000-rule request from 1 s in, then its delete | $(echo "$busy" | tr ' ' '|' | sed 's/|/ | /g') |"
printf '\nthe request took %.1f s, its delete %.1f s (%s, %s)\n' \
    "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" "$netloom" "$(date -u +%FT%TZ)"
