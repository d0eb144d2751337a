#!/usr/bin/env bash
# Live benchmarks (root): netloom against the floor of this machine, side by side in one run.
#
#   1. throughput through a plain TUN-to-TUN forwarder (bench/src/bin/tun-forward.rs: the same
#      two-host experiment, every packet written to the other TUN at once, busy-polling; again
#      with --staged turns, read a batch from every host then write, as netloom does; and again
#      with --gso, TCP super-packets forwarded whole) and through `netloom run` on a zero-delay
#      100 Gbit/s link, busy precision, with GSO (the default) and with --no-gso:
#      64-byte UDP (highest lossless rate by a search, and what arrives at full offered rate)
#      and TCP (iperf3, 5 s); and TCP alone with GSO and the link's default queue;
#   2. round trip of a direct veth pair between two namespaces against the forwarder and
#      netloom's zero-delay link in every precision of PRECISIONS: sockperf ping-pong (UDP,
#      14-byte messages, 1000 a second) and ping (ICMP, 20 ms and 2 ms apart), in ROUNDS rounds
#      that alternate the paths, so that drift of the machine hits every path alike;
#   3. one-way delay error at 0, 100 us, 1 ms and 10 ms link delay, busy and hybrid precision:
#      (RTT - 2 x delay - zero-delay median RTT) / 2 per sockperf sample, the zero-delay median
#      measured in the same run just before `netloom link set` gives the link its delay (BASE=
#      separate: from the zero-delay run, as before);
#   4. netloom's own accuracy (lateness percentiles of its --json report) for every run;
#   5. only with PARTS=workers: one driver against two (`run --workers 2`, hybrid precision) on
#      h1 - r - h2 split so that every packet of h1 crosses (payloads cached, then shipped), and
#      on the two-host link, where each worker carries its own host's traffic: UDP flat out and
#      TCP, with the hand-offs and their lateness; the cached split again with the counts that
#      `--repartition` turns on (an epoch of an hour, so that nothing moves).
#   With AWAKE="off on", netloom's runs of 1 (the GSO path) and 3 are made both without and with
#   --keep-cpus-awake (CPU 0, the programs' CPU, kept from halting by a SCHED_IDLE spinner).
#
# The emulator (forwarder or netloom) is pinned to CPU 1 (`--cpu 1`), the programs under test to
# CPU 0 (taskset), so the two do not trade places between runs. Needs iperf3, sockperf, ip,
# taskset, jq, bc and python3. Writes bench/results/live-<UTC date>[-<parts>].md, with -<HHMM>
# added if that exists, and prints it.
# Knobs: SECONDS_TCP (5), SECONDS_UDP (2), SECONDS_PP (5), REPEAT (3: runs of TCP, of UDP flat
# out and of each rate of the search; medians are reported), PRECISIONS ("busy hybrid"),
# PARTS ("throughput rtt delay": which of sections 1, 2 and 3 to run; PARTS=throughput takes about
# 4 minutes; the report is then named live-<date>-<parts>.md), LINK_QUEUE (1000: the queue of
# netloom's link, in packets, as a host's qdisc would hold; with GSO a super-packet enters it as
# a burst of up to 45 segments, which the default queue of a zero-delay link, 10 packets, drops),
# UDP_WINDOW (unset: iperf3's default): socket buffer size for the UDP tests (iperf3 -w, both
# ends), so that a receiver descheduled for a moment does not overflow its socket first,
# AWAKE ("off": netloom without --keep-cpus-awake; "on": with it; "off on": both, side by side),
# PATHS ("floor staged fwd-gso netloom no-gso default-queue": which rows of section 1 to run;
# netloom's rows are repeated for every AWAKE mode), SOCKPERF_FLAGS (extra flags for the
# sockperf client, for example --no-rdtsc), PROGRAMS_RT (0; 1 runs the programs under test at
# real-time priority, SCHED_FIFO 10, so that no other task on their CPU delays their wake-ups).
# Every result row records the load average (1 min) when it was measured. Takes about 7 minutes
# (AWAKE="off on": about 9; PARTS=delay PRECISIONS=busy AWAKE="off on": about 2).
# NETLOOM_SOURCE names the source revision when the tree is not a git checkout. NETLOOM_BIN runs
# that netloom binary instead of building this tree's (to measure another revision in the same
# session), ROUNDS (3) sets the rounds of section 2.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
SECONDS_TCP=${SECONDS_TCP:-5}
SECONDS_UDP=${SECONDS_UDP:-2}
SECONDS_PP=${SECONDS_PP:-5}
PRECISIONS=${PRECISIONS:-busy hybrid}
LINK_QUEUE=${LINK_QUEUE:-1000}
UDP_WINDOW=${UDP_WINDOW:-}
REPEAT=${REPEAT:-3}
PARTS=${PARTS:-throughput rtt delay}
AWAKE=${AWAKE:-off}
PATHS=${PATHS:-floor staged fwd-gso netloom no-gso default-queue}
SOCKPERF_FLAGS=${SOCKPERF_FLAGS:-}
PROGRAMS_RT=${PROGRAMS_RT:-0}
ROUNDS=${ROUNDS:-3}
rt=()
[ "$PROGRAMS_RT" = 1 ] && rt=(chrt -f 10)
part() { [[ " $PARTS " == *" $1 "* ]]; }
path() { [[ " $PATHS " == *" $1 "* ]]; }
awake_flags() { # awake_flags MODE: netloom run's flags for AWAKE mode MODE (off or on)
    case $1 in
    off) ;;
    on) echo --keep-cpus-awake ;;
    *) echo "AWAKE: unknown mode $1 (off or on)" >&2; exit 2 ;;
    esac
}
awake_label() { [ "$1" = on ] && echo ", --keep-cpus-awake" || true; }
load1() { cut -d' ' -f1 /proc/loadavg; }

[ "$(id -u)" = 0 ] || { echo "bench/live/run.sh needs root (namespaces, TUN)" >&2; exit 2; }
for tool in iperf3 sockperf ip taskset jq python3 bc; do
    command -v "$tool" >/dev/null || { echo "bench/live/run.sh needs $tool" >&2; exit 2; }
done

cargo build --release -p netloom -p netloom-bench >&2
bin="${CARGO_TARGET_DIR:-target}/release"
netloom="${NETLOOM_BIN:-$bin/netloom}"
forward="$bin/tun-forward"

work=$(mktemp -d)
export NETLOOM_RUN_DIR="$work/run"
EXP=""      # the experiment running now (lbfwd or lbnl)
EMU_PID=""  # its process
cleanup() {
    [ -n "$EMU_PID" ] && kill "$EMU_PID" 2>/dev/null && wait "$EMU_PID" 2>/dev/null
    "$netloom" clean >/dev/null 2>&1 || true
    ip netns del lbv1 2>/dev/null || true
    ip netns del lbv2 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

H2=198.18.0.2   # h2's IPv4 address in the address plan (docs/live.md)
x() { # x HOST COMMAND...: run on HOST of the current experiment, pinned to CPU 0 (PROGRAMS_RT=1: SCHED_FIFO 10)
    local host=$1; shift
    "$netloom" exec --name "$EXP" "$host" -- taskset -c 0 "${rt[@]}" "$@"
}
wait_up() {
    for _ in $(seq 200); do
        "$netloom" exec --name "$EXP" h1 -- true 2>/dev/null && return 0
        kill -0 "$EMU_PID" 2>/dev/null || { echo "emulator $EXP died" >&2; exit 1; }
        sleep 0.05
    done
    echo "experiment $EXP not up" >&2; exit 1
}
start_forwarder() { # start_forwarder [--staged] [--gso]
    EXP=lbfwd
    "$forward" "$EXP" --cpu 1 "$@" >"$work/fwd.json" 2>"$work/fwd.err" &
    EMU_PID=$!
    wait_up
}
topology() { # topology DELAY QUEUE: two hosts, one 100 Gbit/s link ("default": its default queue)
    printf 'hosts = ["h1", "h2"]\n[[link]]\na = "h1"\nb = "h2"\nbw = "100Gbit"\ndelay = "%s"\n' "$1" \
        >"$work/topo.toml"
    [ "$2" = default ] || echo "queue = $2" >>"$work/topo.toml"
}
start_netloom() { # start_netloom DELAY PRECISION [FLAGS...]: on a link with LINK_QUEUE
    EXP=lbnl
    topology "$1" "$LINK_QUEUE"
    "$netloom" run --name "$EXP" --json --precision "$2" --cpu 1 "${@:3}" "$work/topo.toml" \
        >"$work/report.json" 2>"$work/run.err" &
    EMU_PID=$!
    wait_up
}
stop_emulator() {
    kill -TERM "$EMU_PID"
    wait "$EMU_PID" || true
    EMU_PID=""
}
lateness() { # of the last netloom run: "p50 / p99 / p99.9 us (late N of M, dropped D)"
    jq -r '"\(.accuracy | "\(.lateness_ns_p50/1000) / \(.lateness_ns_p99/1000) / \(.lateness_ns_p999/1000) (late \(.late) of \(.released)"), dropped \([.pipes[].drops] | add))"' \
        "$work/report.json"
}

# --- 1. throughput -------------------------------------------------------------------------------
udp_at() { # udp_at KPPS: "loss_fraction received_kpps" of 64-byte UDP offered at KPPS (0: flat out)
    local bits=$(($1 * 1000 * 64 * 8))
    # shellcheck disable=SC2086 # UDP_WINDOW is "" or "-w SIZE"
    x h1 iperf3 -c "$H2" -u -l 64 -b "$bits" -t "$SECONDS_UDP" ${UDP_WINDOW:+-w $UDP_WINDOW} -J |
        jq -r --argjson t "$SECONDS_UDP" \
            '.end.sum | "\(.lost_packets / .packets) \((.packets - .lost_packets) / $t / 1000)"'
}
median_range() { # median_range DIGITS: "median (min–max)" of the numbers on stdin
    sort -g | awk -v d="$1" '{v[NR]=$1} END {f="%." d "f"; printf(f " (" f "–" f ")\n", v[int((NR+1)/2)], v[1], v[NR])}'
}
RATES="25 50 75 100 125 150 175 200 250 300 400"
tcp_runs() { # tcp_runs: "median (min–max)" Gbit/s of REPEAT iperf3 TCP runs
    for _ in $(seq "$REPEAT"); do
        x h1 iperf3 -c "$H2" -t "$SECONDS_TCP" -J | jq '.end.sum_received.bits_per_second / 1e9'
    done | median_range 2
}
throughput() { # throughput LABEL: appends to $work/tput.md and $work/search.md
    local label=$1 best=0 loss kpps flat tcp
    x h2 iperf3 -s -D
    sleep 0.3
    tcp=$(tcp_runs)
    local row="| $label |"
    for r in $RATES; do
        loss=$(for _ in $(seq "$REPEAT"); do udp_at "$r" | awk '{print $1}'; done |
            sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
        row="$row $(printf '%.3f' "$(echo "$loss * 100" | bc -l)") |"
        if [ "$(echo "$loss <= 0.001" | bc -l)" = 1 ]; then best=$r; else break; fi
    done
    echo "$row" >>"$work/search.md"
    flat=$(for _ in $(seq "$REPEAT"); do udp_at 0 | awk '{print $2}'; done | median_range 0)
    printf '| %s | %s | %s | %s | %s |' "$label" "$(load1)" "$best" "$flat" "$tcp" >>"$work/tput.md"
}

if part throughput; then
    : >"$work/tput.md"
    : >"$work/search.md"
    if path floor; then
        start_forwarder
        throughput "plain TUN forwarder (floor)"
        echo " – |" >>"$work/tput.md"
        stop_emulator
    fi
    if path staged; then
        start_forwarder --staged
        throughput "plain TUN forwarder, staged turns"
        echo " – |" >>"$work/tput.md"
        stop_emulator
    fi
    if path fwd-gso; then
        start_forwarder --gso
        throughput "plain TUN forwarder, GSO"
        echo " – |" >>"$work/tput.md"
        stop_emulator
    fi
    for awake in $AWAKE; do
        if path netloom; then
            # shellcheck disable=SC2046 # awake_flags prints zero or one flag
            start_netloom 0us busy $(awake_flags "$awake")
            throughput "netloom run, 0 delay, 100 Gbit/s, busy (GSO)$(awake_label "$awake"), $LINK_QUEUE-packet queue"
            stop_emulator
            echo " $(lateness) |" >>"$work/tput.md"
        fi
        if path no-gso; then
            # shellcheck disable=SC2046
            start_netloom 0us busy --no-gso $(awake_flags "$awake")
            throughput "netloom run, 0 delay, 100 Gbit/s, busy, --no-gso$(awake_label "$awake"), $LINK_QUEUE-packet queue"
            stop_emulator
            echo " $(lateness) |" >>"$work/tput.md"
        fi
        if path default-queue; then
            # shellcheck disable=SC2046
            LINK_QUEUE=default start_netloom 0us busy $(awake_flags "$awake")
            x h2 iperf3 -s -D
            sleep 0.3
            tcp=$(tcp_runs)
            stop_emulator
            echo "| netloom run, 0 delay, 100 Gbit/s, busy (GSO)$(awake_label "$awake"), default queue (10 packets), TCP only | $(load1) | – | – | $tcp | $(lateness) |" >>"$work/tput.md"
        fi
    done
fi

# --- 2. round trip over veth, the forwarder and netloom ----------------------------------------------
PORT=11111
pingpong() { # pingpong LOGFILE ADDRESS RUN...: sockperf ping-pong, every sample logged
    local log=$1 addr=$2; shift 2
    # shellcheck disable=SC2086 # SOCKPERF_FLAGS is a list of flags
    "$@" sockperf pp -i "$addr" -p $PORT -t "$SECONDS_PP" --mps 1000 --full-rtt --full-log "$log" \
        $SOCKPERF_FLAGS >/dev/null 2>&1
}
ping_run() { # ping_run LOGFILE INTERVAL ADDRESS RUN...: ping's output, one line per echo
    local log=$1 interval=$2 addr=$3; shift 3
    "$@" ping -c "$PING_COUNT" -i "$interval" "$addr" >"$log" 2>&1 || true
}
PING_COUNT=${PING_COUNT:-200}
rtt_tools() { # rtt_tools TAG ADDRESS RUN...: sockperf and both pings over one path, round $round
    local tag=$1 addr=$2; shift 2
    "$@" ping -c 3 -i 0.01 "$addr" >/dev/null 2>&1 || true
    pingpong "$work/$tag-sp-$round.csv" "$addr" "$@"
    ping_run "$work/$tag-p20-$round.txt" 0.02 "$addr" "$@"
    ping_run "$work/$tag-p2-$round.txt" 0.002 "$addr" "$@"
}
if part rtt; then
    : >"$work/rtt-paths"
    for round in $(seq "$ROUNDS"); do
        ip netns add lbv1
        ip netns add lbv2
        ip link add lbva netns lbv1 type veth peer lbvb netns lbv2
        ip -n lbv1 addr add 10.99.0.1/24 dev lbva
        ip -n lbv2 addr add 10.99.0.2/24 dev lbvb
        ip -n lbv1 link set lbva up
        ip -n lbv2 link set lbvb up
        ip -n lbv1 link set lo up
        ip -n lbv2 link set lo up
        ip netns exec lbv2 taskset -c 0 "${rt[@]}" sockperf sr -i 10.99.0.2 -p $PORT >/dev/null 2>&1 &
        srv=$!
        sleep 0.3
        rtt_tools veth 10.99.0.2 ip netns exec lbv1 taskset -c 0 "${rt[@]}"
        kill "$srv"; wait "$srv" 2>/dev/null || true
        ip netns del lbv1; ip netns del lbv2

        start_forwarder
        x h2 sockperf sr -i "$H2" -p $PORT >/dev/null 2>&1 &
        sleep 0.3
        rtt_tools fwd "$H2" x h1
        stop_emulator

        for precision in $PRECISIONS; do
            start_netloom 0us "$precision"
            x h2 sockperf sr -i "$H2" -p $PORT >/dev/null 2>&1 &
            sleep 0.3
            rtt_tools "nl-$precision" "$H2" x h1
            stop_emulator
            echo "$(lateness)" >>"$work/nl-$precision-lateness"
        done
    done
fi

: >"$work/error.md"
if part delay; then
    # One netloom run per delay. Its zero-delay RTT moves between runs on this machine (two
    # regimes, about 9 and about 21 us, from one minute to the next), so each run first measures
    # its own zero-delay median (the base), then `netloom link set` gives the link its delay and
    # the delay is measured against that base. BASE=separate takes the base from the zero-delay
    # run instead (the method of the runs before 2026-11-21 04:00).
    for precision in $PRECISIONS; do
      for awake in $AWAKE; do
        mode="$precision$(awake_label "$awake")"
        tag="$precision-$awake"
        for delay in 0 100 1000 10000; do
            # shellcheck disable=SC2046
            start_netloom 0us "$precision" $(awake_flags "$awake")
            x h2 sockperf sr -i "$H2" -p $PORT >/dev/null 2>&1 &
            sleep 0.3
            load=$(load1)
            if [ "$delay" != 0 ]; then
                pingpong "$work/nl-$tag-$delay-base.csv" "$H2" x h1
                "$netloom" link set --name "$EXP" h1 h2 "delay=${delay}us" >/dev/null
            fi
            t=$SECONDS_PP
            [ "$delay" -ge 10000 ] && t=$((SECONDS_PP * 2)) # 50 round trips a second at 10 ms
            SECONDS_PP=$t pingpong "$work/nl-$tag-$delay.csv" "$H2" x h1
            stop_emulator
            if [ "$delay" = 0 ]; then
                cp "$work/nl-$tag-0.csv" "$work/nl0-$tag.csv"
                base_file="$work/nl-$tag-0.csv"
            elif [ "${BASE:-inline}" = separate ]; then
                base_file="$work/nl0-$tag.csv"
            else
                base_file="$work/nl-$tag-$delay-base.csv"
            fi
            read -r _ base _ _ < <(python3 bench/live/stats.py rtt "$base_file")
            read -r n e50 e99 e999 a99 < <(python3 bench/live/stats.py error "$work/nl-$tag-$delay.csv" "$delay" "$base")
            read -r _ r50 _ _ < <(python3 bench/live/stats.py rtt "$work/nl-$tag-$delay.csv")
            echo "| $mode | $delay | $load | $n | $base | $r50 | $e50 | $e99 | $e999 | $a99 | $(lateness) |" >>"$work/error.md"
        done
      done
    done
fi

# --- 5. one driver against two ---------------------------------------------------------------------
start_workers() { # start_workers TOPOLOGY FLAGS...: netloom run, hybrid, unpinned
    EXP=lbnl
    "$netloom" run --name "$EXP" --json --precision hybrid "${@:2}" "$1" \
        >"$work/report.json" 2>"$work/run.err" &
    EMU_PID=$!
    wait_up
}
handoffs() { # of the last netloom run: "N (late L, latest M us)"
    jq -r '.accuracy | "\(.handoffs) (late \(.late_handoffs), latest \(.handoff_lateness_ns_max/1000) µs)"' \
        "$work/report.json"
}
workers_row() { # workers_row LABEL TOPOLOGY FLAGS...
    start_workers "${@:2}"
    x h2 iperf3 -s -D
    sleep 0.3
    local flat tcp
    flat=$(for _ in $(seq "$REPEAT"); do udp_at 0 | awk '{print $2}'; done | median_range 0)
    tcp=$(tcp_runs)
    stop_emulator
    echo "| $1 | $flat | $tcp | $(lateness) | $(handoffs) |" >>"$work/workers.md"
}
if part workers; then
    : >"$work/workers.md"
    printf 'hosts = ["h1", "h2"]\nrouters = ["r"]\n[defaults]\nbw = "100Gbit"\ndelay = "10us"\nqueue = %s\n[[link]]\na = "h1"\nb = "r"\n[[link]]\na = "r"\nb = "h2"\n' \
        "$LINK_QUEUE" >"$work/split.toml"
    echo '{"cores": 2, "pipes": [0, 1, 1, 1]}' >"$work/split.json"
    topology 0us "$LINK_QUEUE"
    workers_row "h1 – r – h2, one worker" "$work/split.toml"
    workers_row "h1 – r – h2, two workers, split, cache" "$work/split.toml" \
        --workers 2 --assignment "$work/split.json"
    # The same with the counts dynamic repartitioning observes turned on, and no epoch ending.
    workers_row "h1 – r – h2, two workers, split, cache, counted" "$work/split.toml" \
        --workers 2 --assignment "$work/split.json" --repartition 3600s
    workers_row "h1 – r – h2, two workers, split, ship" "$work/split.toml" \
        --workers 2 --assignment "$work/split.json" --payload ship
    workers_row "h1 – h2, one worker" "$work/topo.toml"
    workers_row "h1 – h2, two workers (one host each)" "$work/topo.toml" --workers 2
fi

# --- report ------------------------------------------------------------------------------------------
report=$(mktemp)
{
    echo "# netloom live benchmarks"
    echo
    echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') ($(nproc) vCPUs), kernel $(uname -r)"
    echo "- source: $(git -C "$repo" describe --always --dirty 2>/dev/null || echo "${NETLOOM_SOURCE:-unknown}")${NETLOOM_BIN:+, the benchmark only; netloom under test: $NETLOOM_BIN}"
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- command: \`bench/live/run.sh\` (SECONDS_TCP=$SECONDS_TCP SECONDS_UDP=$SECONDS_UDP SECONDS_PP=$SECONDS_PP PARTS=\"$PARTS\" UDP_WINDOW=\"$UDP_WINDOW\" AWAKE=\"$AWAKE\" PATHS=\"$PATHS\" PRECISIONS=\"$PRECISIONS\" SOCKPERF_FLAGS=\"$SOCKPERF_FLAGS\" PROGRAMS_RT=$PROGRAMS_RT ROUNDS=$ROUNDS${NETLOOM_BIN:+ NETLOOM_BIN=$NETLOOM_BIN})"
    echo "- emulator pinned to CPU 1 (but in \"One driver against two\"), programs to CPU 0; iperf3 $(iperf3 --version | head -1 | cut -d' ' -f2), sockperf $(sockperf --version 2>&1 | head -1 | awk '{print $3}')"
    if part throughput; then
    echo
    echo "## Throughput"
    echo
    echo "64-byte UDP payloads (iperf3 -u -l 64, ${SECONDS_UDP} s per rate): the highest offered rate with"
    echo "at most 0.1 % loss (loss counted by iperf3's sequence numbers), and what arrives when iperf3"
    echo "sends flat out (-b 0). TCP: iperf3, ${SECONDS_TCP} s, receiver's rate, MTU 1500. Flat out and TCP:"
    echo "median (min–max) of $REPEAT runs. netloom's lateness covers its whole run (all of these)."
    echo
    echo "| path | load | lossless 64-byte UDP, kpps | 64-byte UDP flat out, kpps received | TCP Gbit/s | netloom lateness p50 / p99 / p99.9 µs |"
    echo "|---|---:|---:|---:|---:|---|"
    cat "$work/tput.md"
    echo
    echo "\"staged turns\": the forwarder reads up to 64 packets from each host, then writes them all"
    echo "(the shape of netloom's loop, without its engine), instead of writing each packet as it is read."
    echo "\"GSO\": the forwarder with the TUN offloads on, so TCP crosses as super-packets of up to 64 KB."
    echo "netloom's \"dropped\" counts packets its pipes dropped (the queue of the link, here)."
    echo
    echo "Loss in % at each offered rate (kpps; median of $REPEAT runs), up to the first rate above 0.1 %:"
    echo
    echo "| path | $(echo $RATES | sed 's/ / | /g') |"
    echo "|---|$(for _ in $RATES; do printf -- '---:|'; done)"
    cat "$work/search.md"
    fi
    if part rtt; then
    echo
    echo "## Zero-delay round trip against a direct veth pair"
    echo
    echo "$ROUNDS rounds, each path in turn in every round (samples pooled): sockperf ping-pong (UDP, 14-byte"
    echo "messages, 1000 a second, ${SECONDS_PP} s, --full-rtt), and ping -4 of $PING_COUNT echoes 20 ms and 2 ms"
    echo "apart (ICMP, 84 bytes on the wire). netloom: two hosts on one 100 Gbit/s link of zero delay,"
    echo "\`--cpu 1\`, default flags otherwise. RTT p50 / p99 in µs; \"added\": over the veth pair, same tool."
    echo
    echo "| path | sockperf p50 / p99 | added | ping 20 ms p50 / p99 | added | ping 2 ms p50 / p99 | added |"
    echo "|---|---|---|---|---|---|---|"
    for tag in veth fwd $(for p in $PRECISIONS; do echo "nl-$p"; done); do
        row="| $tag |"
        for tool in sp p20 p2; do
            kind=ping; [ "$tool" = sp ] && kind=rtt
            ext=txt; [ "$tool" = sp ] && ext=csv
            # shellcheck disable=SC2086 # one file per round
            read -r _ t50 t99 _ < <(python3 bench/live/stats.py $kind "$work"/$tag-$tool-*.$ext)
            # shellcheck disable=SC2086
            read -r _ v50 v99 _ < <(python3 bench/live/stats.py $kind "$work"/veth-$tool-*.$ext)
            row="$row $t50 / $t99 | +$(echo "$t50 - $v50" | bc -l) / +$(echo "$t99 - $v99" | bc -l) |"
        done
        echo "$row" | sed 's/+-/-/g'
    done
    echo
    for p in $PRECISIONS; do
        echo "netloom $p, lateness p50 / p99 / p99.9 µs per round: $(paste -sd';' "$work/nl-$p-lateness")"
    done
    fi
    if part workers; then
    echo
    echo "## One driver against two"
    echo
    echo "\`netloom run --precision hybrid [--workers 2 ...]\`, unpinned; links 100 Gbit/s with a"
    echo "$LINK_QUEUE-packet queue, 10 µs per hop on h1 – r – h2 (split: h1's pipe on worker 0, the"
    echo "rest on worker 1, so each of h1's packets crosses twice with payloads cached, or once with"
    echo "each shipped), zero delay on h1 – h2. Median (min–max) of $REPEAT runs."
    echo
    echo "| setup | 64-byte UDP flat out, kpps received | TCP Gbit/s | netloom lateness p50 / p99 / p99.9 µs | hand-offs |"
    echo "|---|---:|---:|---|---|"
    cat "$work/workers.md"
    fi
    if part delay; then
    echo
    echo "## One-way delay error"
    echo
    echo "Per sample: (RTT − 2 × delay − base) / 2, µs, where the base is the median RTT at zero delay"
    if [ "${BASE:-inline}" = separate ]; then
    echo "of the zero-delay run in the same mode (BASE=separate)."
    else
    echo "measured for ${SECONDS_PP} s in the same run just before the link got its delay (\`netloom link set\`)."
    fi
    echo "\"load\" is the 1-minute load average (a --keep-cpus-awake spinner adds 1 to it)."
    echo "netloom's lateness covers the whole run, base included."
    echo "\"|err| p99\" is the 99th percentile of its magnitude. At 10 ms the run lasts"
    echo "$((SECONDS_PP * 2)) s (50 round trips a second), so its p99.9 rests on a few samples."
    echo
    echo "| precision | delay µs | load | samples | base µs | RTT p50 µs | error p50 | error p99 | error p99.9 | \\|err\\| p99 | netloom lateness p50 / p99 / p99.9 µs (late of released) |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    cat "$work/error.md"
    fi
} >"$report"
mkdir -p bench/results
suffix=""
[ "$PARTS" = "throughput rtt delay" ] || suffix="-${PARTS// /-}"
cat "$report"
out="bench/results/live-$(date -u +%Y-%m-%d)$suffix.md"
# A report of the same day and parts is kept: this one gets the time in its name.
[ -e "$out" ] && out="${out%.md}-$(date -u +%H%M).md"
cat "$report" >"$out" # a new file with the umask's mode, not mktemp's 0600
echo "wrote $out" >&2
rm -f "$report"
