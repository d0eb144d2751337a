#!/usr/bin/env bash
# What `netloom shape` costs and how exact it is on this machine's own (loopback) traffic:
#   1. the mechanism: TCP throughput (iperf3) unshaped, through an unlimited pipe, and through
#      1 Gbit/s pipes; the shaping process's CPU per packet;
#   2. delay: curl's connect time through unlimited pipes both ways (what the mechanism adds at
#      zero delay), and through a 10 ms OUT pipe (the SYN crosses it once) minus the unshaped
#      connect time's median: p50 and p99 of the error;
#   3. the same 10 ms error for a namespace's traffic (`--netns`): curl in a namespace made
#      here, through a veth pair, to a server in this one;
#   4. reconfiguration: `netloom shape set` of an existing selector, end to end (a CLI process)
#      and inside the shaping process (bench/src/bin/shape-classify.rs).
# Needs root, iptables-legacy, iproute2, iperf3, curl, python3 (and perf, for the verdict
# syscalls; without it that column says n/a). Run it under the live lock:
#   flock /tmp/netloom-live.lock bench/shape.sh [throughput]
# (`throughput`: part 1 only.)
# Results go to stdout as Markdown; docs/performance.md has a run.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p netloom -p netloom-bench --bin netloom --bin shape-classify
# NETLOOM=path runs another build of netloom (say, an earlier commit's, to compare).
netloom=${NETLOOM:-$target/release/netloom}
export NETLOOM_RUN_DIR=$(mktemp -d /tmp/netloom-shape-bench.XXXXXX)
port=18300
http=18301
ns=netloom-shape-bench
cleanup() {
    "$netloom" clean --name shape >/dev/null 2>&1 || true
    kill "${servers[@]}" 2>/dev/null || true
    ip link del nlshb0 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "$NETLOOM_RUN_DIR"
}
servers=()
trap cleanup EXIT
iperf3 -s -p "$port" >/dev/null 2>&1 &
servers+=($!)
python3 -m http.server "$http" --bind 127.0.0.1 --directory "$NETLOOM_RUN_DIR" >/dev/null 2>&1 &
servers+=($!)
sleep 1

gbps() { iperf3 -c 127.0.0.1 -p "$port" -t 5 -J | python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
packets() { "$netloom" shape show --json | python3 -c 'import json,sys; print(sum(p["packets"] for l in json.load(sys.stdin) for p in l["pipes"]))'; }

echo "## TCP throughput, iperf3 -t 5 over 127.0.0.1"
echo
echo "| path | Gbit/s | shaping process CPU per packet | verdict syscalls (sendto) per packet |"
echo "|---|---|---|---|"
echo "| unshaped | $(gbps) | - | - |"
for pipes in "IN OUT" "IN bw=1Gbit OUT bw=1Gbit"; do
    "$netloom" shape client "$port@127.0.0.1" $pipes >/dev/null
    pid=$(cat "$NETLOOM_RUN_DIR/shape.pid")
    # The shaping process's sendto calls are its verdicts (requests are answered with write).
    sends="$NETLOOM_RUN_DIR/sendto.csv"
    perf_pid=
    if command -v perf >/dev/null; then
        perf stat -x, -e syscalls:sys_enter_sendto -p "$pid" -o "$sends" &
        perf_pid=$!
        sleep 0.2
    fi
    t0=$(cpu_ticks "$pid")
    rate=$(gbps)
    t1=$(cpu_ticks "$pid")
    n=$(packets)
    calls=n/a
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid"
        wait "$perf_pid" || true
        calls=$(awk -F, -v n="$n" '/sendto/ {printf "%.3f (%d calls)", $1 / (n > 0 ? n : 1), $1}' "$sends")
    fi
    hz=$(getconf CLK_TCK)
    us=$(python3 -c "print('%.2f' % (($t1 - $t0) / $hz * 1e6 / max($n, 1)))")
    echo "| through \`$pipes\` | $rate | $us us ($n packets) | $calls |"
    "$netloom" shape stop >/dev/null
    sleep 0.3
done
[ "${1:-}" = throughput ] && exit 0

echo
echo "## Delay error of a 10 ms pipe (curl connect time, 200 connections each)"
echo
# connects URL [PREFIX...]: 200 connect times in seconds, curl run after PREFIX.
connects() {
    local url=$1
    shift
    for _ in $(seq 200); do
        "$@" curl -s -o /dev/null -w '%{time_connect}\n' "$url"
    done
}
# report BASE SHAPED [ZERO]: the error of SHAPED against 10 ms + BASE's median.
report() {
    python3 - "$@" <<'EOF'
import statistics, sys
base = [float(x) * 1e6 for x in sys.argv[1].split()]
shaped = [float(x) * 1e6 for x in sys.argv[2].split()]
b = statistics.median(base)
if len(sys.argv) > 3:
    zero = [float(x) * 1e6 for x in sys.argv[3].split()]
    print(f"zero delay (unlimited IN and OUT pipes): connect median {statistics.median(zero):.0f} us "
          f"against {b:.0f} us unshaped: {statistics.median(zero) - b:.0f} us added for a SYN and a SYN-ACK")
err = sorted(s - b - 10_000 for s in shaped)
q = lambda p: err[min(len(err) - 1, int(p * len(err)))]
print(f"unshaped connect median {b:.0f} us; error of the shaped ones against 10 ms + that: "
      f"p50 {q(0.5):.0f} us, p99 {q(0.99):.0f} us, min {err[0]:.0f} us")
EOF
}
url="http://127.0.0.1:$http/"
base=$(connects "$url")
"$netloom" shape client "$http@127.0.0.1" IN OUT >/dev/null
zero=$(connects "$url")
"$netloom" shape client "$http@127.0.0.1" OUT delay=10ms >/dev/null
shaped=$(connects "$url")
report "$base" "$shaped" "$zero"

echo
echo "## Delay error of a 10 ms pipe on a namespace's traffic (--netns, 200 connections)"
echo
ip netns add "$ns"
ip link add nlshb0 type veth peer name eth0 netns "$ns"
ip addr add 10.198.0.1/24 dev nlshb0
ip link set nlshb0 up
ip -n "$ns" addr add 10.198.0.2/24 dev eth0
ip -n "$ns" link set eth0 up
python3 -m http.server "$((http + 1))" --bind 10.198.0.1 --directory "$NETLOOM_RUN_DIR" >/dev/null 2>&1 &
servers+=($!)
sleep 1
url="http://10.198.0.1:$((http + 1))/"
base=$(connects "$url" ip netns exec "$ns")
"$netloom" shape --netns "$ns" client "$((http + 1))@10.198.0.1" OUT delay=10ms >/dev/null
shaped=$(connects "$url" ip netns exec "$ns")
"$netloom" shape --netns "$ns" stop >/dev/null
echo "curl in namespace $ns through a veth pair to a server in the root namespace:"
report "$base" "$shaped"

echo
echo "## Reconfiguration"
echo
start=$(date +%s%N)
for d in $(seq 1 20); do
    "$netloom" shape client "$http@127.0.0.1" OUT delay=${d}ms >/dev/null
done
end=$(date +%s%N)
echo "\`netloom shape client ... OUT delay=Nms\` on an existing link, end to end: $(( (end - start) / 20000 )) us per change"
start=$(date +%s%N)
for _ in $(seq 1 20); do "$netloom" --version >/dev/null; done
end=$(date +%s%N)
echo "of which starting a netloom process (\`netloom --version\`): $(( (end - start) / 20000 )) us"
"$netloom" shape stop >/dev/null
echo
"$target/release/shape-classify"
