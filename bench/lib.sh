# What the benchmarks share (sourced): which netloom to measure, and binaries measured in turn.

# Prints the netloom binary to measure: $NETLOOM_BIN (or $NETLOOM, which the Python module
# reads too), say an earlier revision's build for a before and after; else this tree's release
# build, built first (into $CARGO_TARGET_DIR when set).
netloom_binary() {
    local given=${NETLOOM_BIN:-${NETLOOM:-}}
    if [ -n "$given" ]; then
        echo "$given"
        return
    fi
    # A command substitution does not inherit `set -e`: a failed build must fail the script.
    cargo build --release --quiet -p netloom >&2 || return
    echo "${CARGO_TARGET_DIR:-target}/release/netloom"
}

# Runs each binary in turn, round by round, in two variants, so that a drift of the machine's
# speed falls on every binary alike; prints each round's figures and, per binary, their medians
# and the median of the rounds' ratios second / first.
#
#   in_turn ROUNDS MEASURE FIRST SECOND UNIT SUMMARY BINARY...
#
# `MEASURE BINARY VARIANT` prints one number for one run of BINARY in variant FIRST or SECOND;
# UNIT (may be empty) follows each round's pair. SUMMARY is a Python format string for each
# binary's last line, over {binary}, {first} and {second} (the medians), {n} (the rounds) and
# {ratio}.
in_turn() {
    local rounds=$1 measure=$2 first=$3 second=$4 unit=$5 summary=$6
    shift 6
    local rows=() round line bin a b
    for round in $(seq "$rounds"); do
        line="round $round:"
        for bin in "$@"; do
            a=$("$measure" "$bin" "$first")
            b=$("$measure" "$bin" "$second")
            rows+=("$bin $a $b")
            line="$line  $bin $a / $b${unit:+ $unit}"
        done
        echo "$line"
    done
    printf '%s\n' "${rows[@]}" | SUMMARY=$summary python3 -c '
import os, statistics, sys
runs = {}
for line in sys.stdin:
    binary, a, b = line.split()
    runs.setdefault(binary, []).append((float(a), float(b)))
for binary, pairs in runs.items():
    print(os.environ["SUMMARY"].format(
        binary=binary,
        first=statistics.median(p[0] for p in pairs),
        second=statistics.median(p[1] for p in pairs),
        n=len(pairs),
        ratio=statistics.median(p[1] / p[0] for p in pairs),
    ))
'
}
