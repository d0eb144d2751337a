#!/usr/bin/env bash
# Times one `netloom` command line with two netloom binaries, in turn (A B A B ...), and prints
# each one's median wall time and the median of the pair-by-pair ratios A/B: pairing keeps the
# ratio meaningful when the machine's speed drifts, which on a shared VM it does by ±20 % from one
# minute to the next.
#
#   bench/compare.sh A_BINARY B_BINARY [RUNS] -- ARGS...
#
# For example, this tree against another revision built in a worktree:
#   git worktree add /tmp/before 356b5a6 && (cd /tmp/before && cargo build --release -p netloom)
#   target/release/netloom gen inet --seed 1 -o /tmp/inet.toml
#   bench/compare.sh target/release/netloom /tmp/before/target/release/netloom 8 -- \
#     sim /tmp/inet.toml --traffic "pattern=random-k k=4 source=aimd cap=3Mbit" --duration 10s --seed 1
# Each command's output is discarded; one warm-up run of each is not counted.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,15p' "$0"; exit 2; }
a=$1 b=$2
shift 2
runs=5
if [ "$1" != "--" ]; then runs=$1; shift; fi
[ "$1" = "--" ] || { echo "compare.sh: expected -- before the netloom arguments" >&2; exit 2; }
shift
wall() { # wall BINARY: seconds one run of BINARY "$@" takes
  local bin=$1 start end
  shift
  start=$(date +%s.%N)
  "$bin" "$@" >/dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
wall "$a" "$@" >/dev/null
wall "$b" "$@" >/dev/null
times=()
for _ in $(seq "$runs"); do
  times+=("$(wall "$a" "$@") $(wall "$b" "$@")")
done
printf '%s\n' "${times[@]}" | python3 -c '
import statistics, sys
pairs = [tuple(map(float, l.split())) for l in sys.stdin]
a, b = [p[0] for p in pairs], [p[1] for p in pairs]
r = [x / y for x, y in pairs]
print(f"A {sys.argv[1]}: wall s median {statistics.median(a):.3f} (min {min(a):.3f}, max {max(a):.3f})")
print(f"B {sys.argv[2]}: wall s median {statistics.median(b):.3f} (min {min(b):.3f}, max {max(b):.3f})")
print(f"A/B pair by pair: median {statistics.median(r):.3f} (min {min(r):.3f}, max {max(r):.3f}), {len(r)} pairs")
' "$a" "$b"
