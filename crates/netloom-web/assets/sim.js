// The viewer of a `netloom sim --json` report (served by `netloom web --report`, or opened from
// the header): throughput and utilization over time, latency CDFs and utilization by pipe, as
// plain SVG line and bar charts.
"use strict";

const PALETTE = ["#2a6fdb", "#d33", "#2a2", "#e90", "#93c", "#0aa", "#a52", "#888"];

// A line chart of `series` ([{name, points: [[x, y]]}]), or with `bars`, one bar per point.
function plot(title, series, xLabel, yLabel, xs, bars) {
  const w = 640, h = 220, left = 50, bottom = 30;
  const section = document.createElement("div");
  section.innerHTML = `<h2>${title}</h2>`;
  const svg = el("svg", { width: w, height: h }, section);
  const all = series.flatMap((s) => s.points);
  if (!all.length) return section;
  const xMax = Math.max(...all.map((p) => p[0])) || 1, yMax = Math.max(...all.map((p) => p[1])) || 1;
  const X = (x) => left + (x / xMax) * (w - left - 10), Y = (y) => h - bottom - (y / yMax) * (h - bottom - 10);
  el("line", { x1: left, y1: h - bottom, x2: w - 10, y2: h - bottom, stroke: "#333" }, svg);
  el("line", { x1: left, y1: 10, x2: left, y2: h - bottom, stroke: "#333" }, svg);
  el("text", { x: w / 2, y: h - 5, "font-size": 11 }, svg).textContent = `${xLabel} (max ${xs(xMax)})`;
  el("text", { x: 4, y: 12, "font-size": 11 }, svg).textContent = `${yLabel} (max ${yMax.toPrecision(3)})`;
  series.forEach((s, k) => {
    const colour = PALETTE[k % PALETTE.length];
    if (!bars) {
      el("polyline", { fill: "none", stroke: colour, "stroke-width": 1.5, "data-series": s.name,
        points: s.points.map(([x, y]) => `${X(x)},${Y(y)}`).join(" ") }, svg);
      return;
    }
    const group = el("g", { fill: colour, "data-series": s.name }, svg);
    const width = (w - left - 10) / (xMax + 1);
    for (const [x, y] of s.points)
      el("rect", { x: left + x * width + 1, y: Y(y), width: Math.max(1, width - 2), height: h - bottom - Y(y) }, group);
  });
  const legend = document.createElement("p");
  legend.className = "legend";
  legend.innerHTML = series.map((s, k) => `<span style="color:${PALETTE[k % PALETTE.length]}">■ ${s.name}</span>`).join("");
  section.appendChild(legend);
  return section;
}

function showSim(report) {
  const box = document.getElementById("sim");
  box.hidden = false;
  document.querySelector("main").hidden = true;
  box.textContent = "";
  const flows = report.flows || [], pipes = report.pipes || [];
  const name = (f, k) => `${k}: ${f.src}→${f.dst} (${f.kind})`;
  const series = report.series;
  if (series) {
    const s = series.interval_ns / 1e9;
    box.appendChild(plot("Throughput of each flow over time",
      series.flows.map((f, k) => ({ name: name(flows[k], k), points: f.throughput_bps.map((v, i) => [(i + 1) * s, v / 1e6]) })),
      "time, s", "Mbit/s", (x) => x.toFixed(1) + " s"));
    box.appendChild(plot("Link utilization over time",
      series.pipes.map((p, k) => ({ name: `${pipes[k].link} ${pipes[k].direction}`, points: p.utilization.map((v, i) => [(i + 1) * s, v]) })),
      "time, s", "utilization", (x) => x.toFixed(1) + " s"));
  } else {
    box.appendChild(plot("Throughput of each flow (whole run; no series in this report: `netloom sim --series 1s`)",
      flows.map((f, k) => ({ name: name(f, k), points: [[0, f.throughput_bps / 1e6], [1, f.throughput_bps / 1e6]] })),
      "run", "Mbit/s", () => "end"));
  }
  // A flow's latency CDF from its percentiles: the fraction of packets at most so late.
  box.appendChild(plot("Latency CDF of each flow (from its percentiles)",
    flows.map((f, k) => {
      const l = f.latency_ns;
      return { name: name(f, k), points: [[l.p50 / 1e6, 0.5], [l.p90 / 1e6, 0.9], [l.p99 / 1e6, 0.99], [l.max / 1e6, 1]] };
    }),
    "latency, ms", "fraction of packets", (x) => x.toFixed(2) + " ms"));
  box.appendChild(plot("Utilization of each pipe (whole run)",
    [{ name: "utilization by pipe, in report order", points: pipes.map((p, k) => [k, p.utilization]) }],
    "pipe, in report order", "utilization", (x) => String(x), true));
  document.body.dataset.sim = `${flows.length} flows, ${pipes.length} pipes, ${series ? "series" : "totals"}`;
}
