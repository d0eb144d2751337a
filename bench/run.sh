#!/usr/bin/env bash
# Builds netloom-bench in release and runs every benchmark, printing the report and keeping a copy
# in bench/results/<UTC date>.md. Extra arguments go to `netloom-bench all` (e.g. --repeat 5).
# Honours CARGO_TARGET_DIR. Takes about two minutes on 2 vCPUs; run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p netloom-bench
mkdir -p bench/results
# Written aside first: truncating a committed results file at the start would make the report's
# source revision read "-dirty".
report=$(mktemp)
trap 'rm -f "$report"' EXIT
"${CARGO_TARGET_DIR:-target}/release/netloom-bench" all "$@" | tee "$report"
cat "$report" > "bench/results/$(date -u +%Y-%m-%d).md"
