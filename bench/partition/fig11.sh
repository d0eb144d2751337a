#!/usr/bin/env bash
# Figure 11 of the ModelNet partitioning paper in virtual time (docs/partition.md): h2 (400
# hosts), clients switching from a target tree to another at random instants, 300 s in 30 s
# epochs; the efficiency of the static partition against the dynamic one, remade every epoch
# from the last epoch's traffic. Writes docs/partition/fig11.svg and prints a Markdown table.
# Usage: bench/partition/fig11.sh [CORES] [IMBALANCE] (default 4 cores, imbalance 1.2).
set -euo pipefail
cd "$(dirname "$0")/../.."
cores="${1:-4}"
imbalance="${2:-1.2}"
source bench/lib.sh
netloom=$(netloom_binary)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$netloom" gen tree-mesh --height 2 --hosts-per 50 -o "$work/h2.toml" >/dev/null
"$netloom" sim "$work/h2.toml" --traffic 'pattern=switching within=300s source=aimd cap=3Mbit' \
  --duration 300s --cores "$cores" --imbalance "$imbalance" --repartition 30s --no-wall-clock \
  --json >"$work/run.json"
python3 - "$work/run.json" docs/partition/fig11.svg "$cores" <<'PY'
import json, sys
run, out, cores = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
r = run["repartition"]
print(f"h2, {cores} cores, {r['method']} (imbalance {r['imbalance']}), epochs of {r['epoch_ns'] / 1e9:g} s")
print()
print("| epoch (s) | static | dynamic | static imbalance | dynamic imbalance | pipes moved after |")
print("|---|---|---|---|---|---|")
for e in r["epochs"]:
    print(f"| {e['start_ns'] / 1e9:g}–{e['end_ns'] / 1e9:g} | {e['static_efficiency']:.3f} | "
          f"**{e['dynamic_efficiency']:.3f}** | {e['static_imbalance']:.2f} | "
          f"{e['dynamic_imbalance']:.2f} | {e['moved_pipes']} |")
# A line chart of both efficiencies at each epoch's middle, as a small standalone SVG.
w, h, left, right, top, bottom = 480, 300, 60, 110, 30, 40
end = r["epochs"][-1]["end_ns"] / 1e9
x = lambda t: left + t / end * (w - left - right)
y = lambda v: h - bottom - v * (h - top - bottom)
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
       f'<rect width="{w}" height="{h}" fill="white"/>',
       f'<text x="{w / 2}" y="18" text-anchor="middle" font-size="14">h2, {cores} cores: efficiency per epoch</text>',
       f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
       f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
       f'<text x="14" y="{(top + h - bottom) / 2}" transform="rotate(-90 14 {(top + h - bottom) / 2})" text-anchor="middle">efficiency</text>',
       f'<text x="{(left + w - right) / 2}" y="{h - 6}" text-anchor="middle">time (s)</text>']
for i in range(6):
    v = i * 0.2
    svg.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{w - right}" y2="{y(v):.1f}" stroke="#ddd"/>'
               f'<text x="{left - 4}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
for t in range(0, int(end) + 1, 60):
    svg.append(f'<text x="{x(t):.1f}" y="{h - bottom + 15}" text-anchor="middle">{t}</text>')
for i, (name, key, colour) in enumerate([("static", "static_efficiency", "#d62728"),
                                         ("dynamic", "dynamic_efficiency", "#1f77b4")]):
    points = " ".join(f"{x((e['start_ns'] + e['end_ns']) / 2e9):.1f},{y(e[key]):.1f}" for e in r["epochs"])
    svg.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>')
    ly = top + 16 * i + 10
    svg.append(f'<line x1="{w - right + 10}" y1="{ly}" x2="{w - right + 30}" y2="{ly}" stroke="{colour}" stroke-width="2"/>'
               f'<text x="{w - right + 35}" y="{ly + 4}">{name}</text>')
svg.append("</svg>")
open(out, "w").write("\n".join(svg) + "\n")
PY
