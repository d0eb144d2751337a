#!/usr/bin/env python3
"""Percentiles of a sockperf --full-log file, for bench/live/run.sh.

  stats.py rtt FILE...
      prints "n p50 p99 p999" of the round-trip times (us) of every file together
  stats.py ping FILE...
      the same for ping's output ("time=0.123 ms" per echo)
  stats.py error FILE DELAY_US BASE_US
      prints "n p50 p99 p999 abs_p99" of the one-way delay error (us):
      (rtt - 2 * DELAY_US - BASE_US) / 2 per sample, BASE_US being the median round trip of
      the zero-delay path. Signed percentiles, then the 99th percentile of its magnitude.

Percentiles are nearest-rank on the sorted samples.
"""

import math
import sys


def samples(path):
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 4 and parts[0].isdigit():
                out.append(float(parts[3]))
    if not out:
        sys.exit(f"{path}: no samples")
    return out


def ping_samples(path):
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if "time=" in line:
                out.append(float(line.split("time=")[1].split()[0]) * 1000.0)
    if not out:
        sys.exit(f"{path}: no echoes")
    return out


def pct(sorted_values, p):
    k = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[k - 1]


def main():
    kind, paths = sys.argv[1], sys.argv[2:]
    if kind in ("rtt", "ping"):
        read = samples if kind == "rtt" else ping_samples
        v = sorted(x for path in paths for x in read(path))
        print(f"{len(v)} {pct(v, 50):.1f} {pct(v, 99):.1f} {pct(v, 99.9):.1f}")
        return
    path = paths[0]
    rtt = samples(path)
    if kind == "error":
        delay, base = float(sys.argv[3]), float(sys.argv[4])
        err = sorted((r - 2 * delay - base) / 2 for r in rtt)
        mag = sorted(abs(e) for e in err)
        print(
            f"{len(err)} {pct(err, 50):.1f} {pct(err, 99):.1f} {pct(err, 99.9):.1f} "
            f"{pct(mag, 99):.1f}"
        )
    else:
        sys.exit(f"unknown kind {kind}")


if __name__ == "__main__":
    main()
