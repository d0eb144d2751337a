#!/usr/bin/env bash
# How long a run over two machines takes to start with its workers started through srun inside a
# Slurm job (`--cluster slurm`) against the same workers started over SSH (docs/performance.md,
# "Start-up through srun and through SSH"): on the two-node Slurm the tests make on this machine
# (crates/netloom-cli/tests/slurm_lab: munged, slurmctld, two slurmd, the second node in a
# network namespace of its own) with an sshd on each node's address, `netloom run --detach` of
# four hosts on one router, timed by the shell that starts it from its launch until every host
# is up on both nodes, REPEAT times each way in turn (default 5), then the medians. Needs root,
# Debian's slurm-wlm, munge and openssh-server; runs as the ignored test
# `start_up_through_srun_and_through_ssh`, whose lab leaves nothing behind.
# Usage: bench/live/cluster-start.sh                           builds and measures the release build
#        NETLOOM_BIN=/path/netloom bench/live/cluster-start.sh   measures another build
#        REPEAT=9 bench/live/cluster-start.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
NETLOOM_BIN="$(realpath "$(netloom_binary)")"
export NETLOOM_BIN
echo "$(git rev-parse --short HEAD), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg), slurm-wlm $(dpkg-query -W -f '${Version}' slurm-wlm 2>/dev/null), $(ssh -V 2>&1)"
REPEAT="${REPEAT:-5}" cargo test --quiet -p netloom --test live -- --ignored --nocapture \
    --exact live_slurm::start_up_through_srun_and_through_ssh 2>&1 | grep -E '^(start-up|srun: \[|ssh:  \[|SKIPPED|test result)|panicked'
