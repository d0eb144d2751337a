#!/usr/bin/env bash
# What carries the lock-step windows (docs/performance.md, "Sim transports: MPI, TCP, threads"):
# the same `netloom sim` on tree-mesh h5 and inet with the paper's workload (METIS over 2) as
# 2 MPI ranks (`mpirun -np 2 ... --mpi`, as Open MPI starts them by default: each bound to a
# core, busy-polling while it waits; and yielding: `--bind-to none --mca mpi_yield_when_idle 1`),
# 2 worker processes over TCP (`--workers 2 --processes`), 2 threads (`--workers 2`) and one
# engine for reference, runs alternating; for
# each, the median of REPEAT runs and its range, of the command's wall time (start-up, MPI's
# included) and of the report's packet-hop rate; and whether the three partitioned reports are
# the same (with --no-wall-clock, byte for byte).
# Usage: bench/sim-transport.sh                    release build with --features mpi, 2 s, 3 runs
#        SECONDS_SIM=10 REPEAT=3 bench/sim-transport.sh
#        NETLOOM_BIN=/path/netloom bench/sim-transport.sh    a build with the mpi feature
# Needs Open MPI (mpirun: Debian's openmpi-bin; .ci/run installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${NETLOOM_BIN:-}" ]; then
    bin=$NETLOOM_BIN
else
    cargo build --release --quiet -p netloom --features mpi
    bin="${CARGO_TARGET_DIR:-target}/release/netloom"
fi
seconds="${SECONDS_SIM:-2}"
repeat="${REPEAT:-3}"
traffic="pattern=random-k k=4 source=aimd cap=3Mbit"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
# Root may run mpirun here (CI and the VM are root); 2 ranks take the 2 slots of a 2-CPU machine.
mpirun=(mpirun --allow-run-as-root -np 2)
# Open MPI's way for a machine it does not have to itself: ranks neither pinned nor spinning.
yielding=("${mpirun[@]}" --bind-to none --mca mpi_yield_when_idle 1)

# One run of `CMD... --json`: wall seconds of the whole command, and M packet-hops/s reported.
timed() {
    local start end
    start=$(date +%s.%N)
    "$@" --json >"$dir/run.json"
    end=$(date +%s.%N)
    python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print("%.3f %.2f" % (float(sys.argv[3]) - float(sys.argv[2]), r["totals"]["packet_hops_per_second"] / 1e6))' \
        "$dir/run.json" "$start" "$end"
}

# "median (min–max)" of column $1 of stdin.
spread() {
    cut -d' ' -f"$1" | sort -g |
        awk '{ v[NR] = $1 } END { printf "%.2f (%.2f–%.2f)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

echo "binary: $bin ($("$bin" --version)), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
echo "$(mpirun --version | head -1); sim FILE --traffic '$traffic' --duration ${seconds}s, METIS over 2, $repeat runs each, alternating"
echo
echo "| workload | carrier | wall, s | M packet-hops/s | windows | same report |"
echo "|---|---|---|---|---|---|"
for kind in h5 inet; do
    file="$dir/$kind.toml"
    case $kind in
    h5) "$bin" gen tree-mesh --height 5 -o "$file" >/dev/null 2>&1 ;;
    inet) "$bin" gen inet --seed 1 -o "$file" >/dev/null 2>&1 ;;
    esac
    common=(sim "$file" --traffic "$traffic" --duration "${seconds}s")
    : >"$dir/one" && : >"$dir/threads" && : >"$dir/tcp" && : >"$dir/mpi" && : >"$dir/yielding"
    for _ in $(seq "$repeat"); do
        timed "$bin" "${common[@]}" >>"$dir/one"
        timed "$bin" "${common[@]}" --workers 2 >>"$dir/threads"
        timed "$bin" "${common[@]}" --workers 2 --processes >>"$dir/tcp"
        timed "${mpirun[@]}" "$bin" "${common[@]}" --mpi >>"$dir/mpi"
        timed "${yielding[@]}" "$bin" "${common[@]}" --mpi >>"$dir/yielding"
    done
    "$bin" "${common[@]}" --workers 2 --json --no-wall-clock >"$dir/t.json"
    "$bin" "${common[@]}" --workers 2 --processes --json --no-wall-clock >"$dir/p.json"
    "${mpirun[@]}" "$bin" "${common[@]}" --mpi --json --no-wall-clock >"$dir/m.json"
    "${yielding[@]}" "$bin" "${common[@]}" --mpi --json --no-wall-clock >"$dir/y.json"
    windows=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["workers"]["windows"])' "$dir/t.json")
    same=$(cmp -s "$dir/t.json" "$dir/p.json" && cmp -s "$dir/t.json" "$dir/m.json" &&
        cmp -s "$dir/t.json" "$dir/y.json" && echo yes || echo NO)
    for carrier in one threads tcp mpi yielding; do
        case $carrier in
        one) label="1 engine" w="-" s="-" ;;
        threads) label="2 threads" w=$windows s=$same ;;
        tcp) label="2 processes (TCP)" w=$windows s=$same ;;
        mpi) label="2 MPI ranks" w=$windows s=$same ;;
        yielding) label="2 MPI ranks, yielding" w=$windows s=$same ;;
        esac
        printf '| %s | %s | %s | %s | %s | %s |\n' "$kind" "$label" "$(spread 1 <"$dir/$carrier")" \
            "$(spread 2 <"$dir/$carrier")" "$w" "$s"
    done
done
