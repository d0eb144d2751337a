#!/usr/bin/env python3
"""Where each worker's time goes in `sim --workers 2`, window by window.

Build netloom with bench/results/workers-2026-11-24-window-trace.patch applied (it makes each
worker write, per window, the ns it spent taking hand-offs, at the first barrier, advancing, handing
over, at the second barrier, the hops it advanced and the hand-offs it took, into
$WINDOW_TRACE/worker-K.txt), run for example

    WINDOW_TRACE=/tmp/tr netloom sim inet.toml --traffic "pattern=random-k k=4 source=aimd cap=3Mbit" \\
        --duration 5s --seed 1 --workers 2

then `bench/window_trace.py /tmp/tr`. Prints each worker's totals and what the windows cost
beyond the work itself: the sum over windows of the slower worker's advance against the mean.
"""
import statistics
import sys

FIELDS = ["take", "barrier 1", "advance", "hand over", "barrier 2", "hops", "taken"]


def main(directory):
    workers = []
    k = 0
    while True:
        try:
            with open(f"{directory}/worker-{k}.txt") as f:
                workers.append([list(map(int, line.split())) for line in f])
        except FileNotFoundError:
            break
        k += 1
    n = min(len(w) for w in workers)
    for k, rows in enumerate(workers):
        sums = [sum(r[i] for r in rows) for i in range(7)]
        secs = ", ".join(f"{FIELDS[i]} {sums[i] / 1e9:.3f} s" for i in range(5))
        print(f"worker {k}: {secs}; {sums[5]} hops ({sums[2] / max(sums[5], 1):.1f} ns each "
              f"advancing), {sums[6]} hand-offs taken; median advance "
              f"{statistics.median(r[2] for r in rows) / 1e3:.1f} us per window")
    slowest = sum(max(w[i][2] for w in workers) for i in range(n))
    mean = sum(sum(w[i][2] for w in workers) / len(workers) for i in range(n))
    hops_max = sum(max(w[i][5] for w in workers) for i in range(n))
    hops_mean = sum(sum(w[i][5] for w in workers) / len(workers) for i in range(n))
    print(f"{n} windows; advance: slower worker's sum {slowest / 1e9:.3f} s, mean {mean / 1e9:.3f} s "
          f"({slowest / mean:.3f}); hops: slower worker's sum {hops_max}, mean {hops_mean:.0f} "
          f"({hops_max / hops_mean:.3f})")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
