# What the benchmarks share (sourced, from the repository's root): which netloom to measure.

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
