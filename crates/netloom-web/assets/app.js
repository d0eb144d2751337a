// netloom's web view: reads /api/info once and polls /api/stats once a second, draws the
// topology (where its nodes are when the file says, else by a force layout; links coloured and
// widened by their utilization over the last poll, heat.js), pans and zooms it (view.js) with
// labels where there is room (labels.js) and a tooltip per node (tooltip.js), shows a link's
// parameters and counters and a chart of its last minutes, changes a link through /api/link (the
// same change as `netloom link set`), or shows a `netloom sim --json` report (sim.js). Plain JS
// and SVG, no library.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const POLL_MS = 1000;
const HISTORY = 300; // samples kept per link: five minutes at one a second
const params = new URLSearchParams(location.search);
const state = {
  graph: null, // {nodes: Map name -> {x, y, host}, links: Map label -> {a, b, pipes: [index]}}
  last: null, // the previous report, for rates
  history: new Map(), // link label -> [{t, util, drops, queue}]
  selected: null,
  hovered: null,
  positions: {}, // node name -> {lat, lon} or {x, y}, from /api/info
};

function el(tag, attrs, parent) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

// --- topology, from the report's pipes: every pipe names its link and its two ends -------------

function topology(report) {
  const hosts = new Set(report.hosts.map((h) => h.name));
  const nodes = new Map();
  const links = new Map();
  report.pipes.forEach((p, i) => {
    for (const n of [p.from, p.to]) if (!nodes.has(n)) nodes.set(n, { host: hosts.has(n) });
    let l = links.get(p.link);
    if (!l) links.set(p.link, (l = { a: p.from, b: p.to, pipes: [] }));
    if (p.direction === "a-b" || p.direction === "shared") [l.a, l.b] = [p.from, p.to];
    l.pipes.push(i);
  });
  for (const h of hosts) if (!nodes.has(h)) nodes.set(h, { host: true });
  for (const [name, v] of nodes) { v.name = name; v.links = []; }
  for (const [label, l] of links) { nodes.get(l.a).links.push(label); nodes.get(l.b).links.push(label); }
  const geographic = place(nodes, links, state.positions);
  if (!geographic) layout(nodes, links);
  document.body.dataset.layout = geographic ? "geographic" : "force";
  // Whose label gets room first: hosts (what a user runs programs on), then the best connected
  // routers, then by name, so the same view always shows the same labels.
  const ranked = [...nodes.values()].sort((u, v) =>
    (v.host - u.host) || (v.links.length - u.links.length) || (u.name < v.name ? -1 : u.name > v.name ? 1 : 0));
  return { nodes, links, ranked };
}

// The geographic layout, when the topology file places at least half the routers (or, without
// routers, half the hosts; /api/info's `positions`): latitude/longitude by an equirectangular
// projection (longitude scaled by the cosine of the mean latitude, north up), or x/y as they are,
// fitted to the same square as the force layout. A node without a position (the hosts an import
// attached) goes beside its placed neighbours, around them; one with none in reach, in a row
// below. Returns false, placing nothing, when too few nodes have positions.
function place(nodes, links, positions) {
  const list = [...nodes.entries()];
  const routers = list.filter(([, v]) => !v.host);
  const counted = routers.length ? routers : list;
  if (!positions || counted.filter(([n]) => positions[n]).length * 2 < counted.length) return false;
  const known = list.filter(([n]) => positions[n]);
  const earth = known.some(([n]) => "lat" in positions[n]);
  const cos = earth ? Math.cos((known.reduce((s, [n]) => s + positions[n].lat, 0) / known.length) * Math.PI / 180) : 1;
  const xy = (p) => ("lat" in p ? [p.lon * cos, -p.lat] : [p.x, p.y]);
  const pts = known.map(([n]) => xy(positions[n]));
  const [x0, x1] = [Math.min(...pts.map((p) => p[0])), Math.max(...pts.map((p) => p[0]))];
  const [y0, y1] = [Math.min(...pts.map((p) => p[1])), Math.max(...pts.map((p) => p[1]))];
  const side = Math.sqrt(list.length) * 40 + 100;
  const scale = side / Math.max(x1 - x0, y1 - y0, 1e-9);
  known.forEach(([, v], i) => { v.x = (pts[i][0] - x0) * scale; v.y = (pts[i][1] - y0) * scale; v.placed = true; });
  // Breadth first from the placed nodes: each newly reached node sits on a small circle around
  // the first placed neighbour that reaches it.
  const around = new Map(list.map(([, v]) => [v, []]));
  for (const l of links.values()) {
    const a = nodes.get(l.a), b = nodes.get(l.b);
    around.get(a).push(b); around.get(b).push(a);
  }
  let frontier = known.map(([, v]) => v);
  while (frontier.length) {
    const next = [];
    for (const v of frontier) {
      const fresh = around.get(v).filter((u) => !u.placed);
      fresh.forEach((u, k) => {
        const t = (2 * Math.PI * k) / fresh.length + 0.5, r = side * 0.025;
        u.x = v.x + r * Math.cos(t); u.y = v.y + r * Math.sin(t); u.placed = true;
        next.push(u);
      });
    }
    frontier = next;
  }
  list.filter(([, v]) => !v.placed).forEach(([, v], k) => { v.x = k * 30; v.y = side + 60; });
  return true;
}

// A force-directed layout (springs along links, repulsion between nodes). Repulsion only looks
// at nodes in neighbouring grid cells, so a step costs about O(n): thousands of nodes settle in
// a second of script time.
function layout(nodes, links) {
  const list = [...nodes.values()];
  const n = list.length;
  const side = Math.sqrt(n) * 40 + 100;
  list.forEach((v, i) => {
    // A deterministic spiral start: the same topology draws the same picture.
    const r = side * 0.4 * Math.sqrt((i + 0.5) / n), t = i * 2.399963;
    v.x = side / 2 + r * Math.cos(t);
    v.y = side / 2 + r * Math.sin(t);
  });
  const edges = [...links.values()].map((l) => [nodes.get(l.a), nodes.get(l.b)]);
  const want = 40, cell = want * 2;
  const steps = n > 2000 ? 60 : 200;
  for (let s = 0; s < steps; s++) {
    const heat = 1 - s / steps;
    for (const v of list) v.dx = v.dy = 0;
    const grid = new Map();
    for (const v of list) {
      const k = Math.floor(v.x / cell) + "," + Math.floor(v.y / cell);
      (grid.get(k) || grid.set(k, []).get(k)).push(v);
    }
    for (const v of list) {
      const cx = Math.floor(v.x / cell), cy = Math.floor(v.y / cell);
      for (let gx = cx - 1; gx <= cx + 1; gx++)
        for (let gy = cy - 1; gy <= cy + 1; gy++)
          for (const u of grid.get(gx + "," + gy) || []) {
            if (u === v) continue;
            let dx = v.x - u.x, dy = v.y - u.y, d2 = dx * dx + dy * dy;
            if (d2 < 0.01) { dx = Math.random() - 0.5; dy = Math.random() - 0.5; d2 = 0.5; }
            if (d2 > cell * cell) continue;
            const f = (want * want) / d2;
            v.dx += dx * f * 0.05; v.dy += dy * f * 0.05;
          }
    }
    for (const [u, v] of edges) {
      const dx = v.x - u.x, dy = v.y - u.y, d = Math.sqrt(dx * dx + dy * dy) || 1;
      const f = (d - want) / d * 0.1;
      u.dx += dx * f; u.dy += dy * f; v.dx -= dx * f; v.dy -= dy * f;
    }
    const cap = 20 * heat + 1;
    for (const v of list) {
      const m = Math.sqrt(v.dx * v.dx + v.dy * v.dy) || 1;
      v.x += (v.dx / m) * Math.min(m, cap);
      v.y += (v.dy / m) * Math.min(m, cap);
    }
  }
}

// Draws links, dots and labels once per topology, in layout units; the view (view.js) then only
// moves the viewBox, and `redraw` keeps dots and labels their size on screen.
function draw(graph) {
  const svg = document.getElementById("graph");
  svg.textContent = "";
  graph.big = graph.nodes.size > 300; // hundreds of nodes: smaller dots, thinner idle links
  const linkLayer = el("g", {}, svg), nodeLayer = el("g", {}, svg), labelLayer = el("g", { class: "labels" }, svg);
  graph.labelLayer = labelLayer;
  for (const [label, l] of graph.links) {
    const a = graph.nodes.get(l.a), b = graph.nodes.get(l.b);
    l.line = el("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, stroke: heatColour(0), "stroke-width": heatWidth(0, 0, graph.big),
      "vector-effect": "non-scaling-stroke", "data-link": label }, linkLayer);
    l.line.addEventListener("mouseenter", () => { state.hovered = label; detail(); });
    l.line.addEventListener("mouseleave", () => { state.hovered = null; detail(); });
    l.line.addEventListener("click", () => select(label));
  }
  for (const [name, v] of graph.nodes) {
    v.dot = el("circle", { cx: v.x, cy: v.y, r: 1, class: v.host ? "host" : "router", "data-node": name, tabindex: 0 }, nodeLayer);
    const enter = (x, y) => { showTip(name, x, y); state.pointed = name; redraw(); };
    const leave = () => { hideTip(name); if (state.pointed === name) { state.pointed = null; redraw(); } };
    v.dot.addEventListener("mouseenter", (e) => { const r = svg.getBoundingClientRect(); enter(e.clientX - r.left, e.clientY - r.top); });
    v.dot.addEventListener("mouseleave", leave);
    v.dot.addEventListener("focus", () => enter(...toScreen(v.x, v.y)));
    v.dot.addEventListener("blur", leave);
    v.label = el("text", {}, labelLayer);
    v.label.textContent = name;
  }
  measureLabels(graph, labelLayer);
  const xs = [...graph.nodes.values()].map((v) => v.x), ys = [...graph.nodes.values()].map((v) => v.y);
  fitView({ x0: Math.min(...xs), y0: Math.min(...ys), x1: Math.max(...xs), y1: Math.max(...ys) });
  // `?zoom=K&at=NODE`: start K times closer than fit, centred on NODE (a view to share, and the
  // headless tests' zoomed view).
  const at = graph.nodes.get(params.get("at"));
  if (params.get("zoom")) zoomTo(at ? at.x : view.x, at ? at.y : view.y, Number(params.get("zoom")) || 1);
  document.body.dataset.nodes = graph.nodes.size;
  document.body.dataset.links = graph.links.size;
}

// A dot's radius on screen, pixels: a few nodes get bigger dots, hundreds smaller ones.
function radius(v) {
  const n = state.graph.nodes.size;
  return (v.host ? 5 : n > 300 ? 2.5 : 4) + (n <= 30 ? 2 : 0);
}

// After every change of the view: dots keep their size on screen, labels are placed anew (those
// of the node under the pointer and of the selected link's ends first), and, once the view has
// settled, the page says what it shows (`data-labels`, `data-label-overlaps`, `data-zoom` and
// `data-graph-box`, the graph's place in the window, and `data-viewport`, the window's size, for
// the headless tests and anyone curious).
function redraw() {
  const graph = state.graph;
  if (!graph) return;
  for (const v of graph.nodes.values()) v.dot.setAttribute("r", radius(v) / view.k);
  graph.labelLayer.setAttribute("font-size", LABEL_PX / view.k);
  const first = new Set();
  if (state.pointed) first.add(state.pointed);
  const sel = state.selected && graph.links.get(state.selected);
  if (sel) { first.add(sel.a); first.add(sel.b); }
  const shown = placeLabels(graph, first, radius);
  clearTimeout(state.settle);
  state.settle = setTimeout(() => {
    const b = document.getElementById("graph").getBoundingClientRect();
    Object.assign(document.body.dataset, {
      labels: shown.length,
      labelOverlaps: labelOverlaps(shown),
      zoom: (view.k / view.fitK).toFixed(2),
      graphBox: [b.left, b.top, b.width, b.height].map(Math.round).join(","),
      viewport: `${innerWidth}x${innerHeight}`,
    });
  }, 150);
}

// --- live figures ------------------------------------------------------------------------------

// A pipe's utilization since the last poll: the report's is since the start (bytes out × 8 over
// rate × uptime), so utilization × uptime is the time it was busy.
function recent(p, q, dt) {
  if (!q || dt <= 0) return p.utilization;
  return Math.max(0, (p.utilization * state.uptime - q.utilization * state.lastUptime) / dt);
}

function update(report) {
  const changed = !state.graph || report.pipes.length !== state.pipesSeen;
  if (changed) {
    state.graph = topology(report);
    state.pipesSeen = report.pipes.length;
    state.last = null;
    draw(state.graph);
  }
  state.lastUptime = state.uptime || 0;
  state.uptime = report.uptime_ns / 1e9;
  const dt = state.uptime - state.lastUptime;
  const before = state.last;
  for (const [label, l] of state.graph.links) {
    let util = 0, drops = 0, queue = 0;
    l.now = [];
    for (const i of l.pipes) {
      const p = report.pipes[i], q = before && before.pipes[i];
      const d = { from: p.from, to: p.to, util: recent(p, q, dt), drops: p.drops - (q ? q.drops : 0), queue: p.queue_packets,
        bps: q && dt > 0 ? ((p.bytes_out - q.bytes_out) * 8) / dt : 0 };
      l.now.push(d);
      util = Math.max(util, d.util);
      drops += d.drops;
      queue += d.queue;
    }
    l.line.setAttribute("stroke", heatColour(util));
    l.line.setAttribute("stroke-width", heatWidth(util, queue, state.graph.big));
    l.line.setAttribute("stroke-opacity", drops > 0 ? 1 : 0.8);
    l.line.classList.toggle("selected", label === state.selected);
    // A link that warms up is drawn over the idle ones (last in its layer), so a hot path
    // through a dense mesh is not hidden under grey lines.
    const hot = util >= IDLE_BELOW;
    if (hot && !l.hot) l.line.parentNode.appendChild(l.line);
    l.hot = hot;
    const h = state.history.get(label) || state.history.set(label, []).get(label);
    h.push({ t: state.uptime, util, drops, queue });
    if (h.length > HISTORY) h.shift();
  }
  state.last = report;
  state.report = report;
  const a = report.accuracy;
  document.getElementById("title").textContent =
    `${report.experiment}: ${state.uptime.toFixed(0)} s, ${report.in_flight} packets inside`;
  const v = document.getElementById("verdict");
  v.textContent = `${a.accurate ? "ACCURATE so far" : "INACCURATE"}: lateness p99 ${(a.lateness_ns_p99 / 1e3).toFixed(1)} us, ` +
    `${a.late} late, ${a.physical_drops} physical drops`;
  v.className = a.accurate ? "ok" : "bad";
  detail();
  renderTip();
}

function row(k, v) {
  return `<tr><td>${k}</td><td>${v}</td></tr>`;
}

// A pipe's parameters now (the topology file's keys, after any change), as rows; reports of
// older versions have none.
function parameters(params) {
  if (!params) return "";
  const text = (v) => (typeof v === "object" ? Object.entries(v).map(([k, x]) => `${k}=${x}`).join(" ") : String(v));
  return `<tr><th colspan=2>parameters</th></tr>` +
    Object.entries(params).map(([k, v]) => row(k, text(v))).join("");
}

function detail() {
  const label = state.hovered || state.selected;
  const box = document.getElementById("detail");
  if (!label || !state.report || !state.graph.links.has(label)) { box.innerHTML = ""; return; }
  const l = state.graph.links.get(label);
  let html = `<h3>${label}</h3>`;
  for (const i of l.pipes) {
    const p = state.report.pipes[i];
    html += `<table><tr><th colspan=2>${p.from} → ${p.to} (${p.direction})</th></tr>` +
      row("packets in / out", `${p.packets_in} / ${p.packets_out}`) +
      row("MB out", (p.bytes_out / 1e6).toFixed(3)) +
      row("utilization since start", (100 * p.utilization).toFixed(1) + " %") +
      row("queue now (pkts / bytes)", `${p.queue_packets} / ${p.queue_bytes}`) +
      row("queue high-water (pkts)", p.queue_hwm_packets) +
      Object.entries(p.drops_by_cause).map(([c, n]) => row(`drops: ${c}`, n)).join("") +
      parameters(p.params) +
      "</table>";
  }
  box.innerHTML = html;
  box.appendChild(chart(state.history.get(label) || []));
}

// A small chart of a link's utilization (line) and drops (bars) over the samples kept.
function chart(samples) {
  const w = 290, h = 80;
  const svg = el("svg", { width: w, height: h, class: "chart" });
  if (samples.length < 2) return svg;
  const t0 = samples[0].t, t1 = samples[samples.length - 1].t || t0 + 1;
  const x = (t) => ((t - t0) / Math.max(1e-9, t1 - t0)) * (w - 4) + 2;
  const maxDrops = Math.max(1, ...samples.map((s) => s.drops));
  for (const s of samples)
    if (s.drops > 0) el("rect", { x: x(s.t) - 1, y: h - (s.drops / maxDrops) * (h / 3), width: 2, height: (s.drops / maxDrops) * (h / 3), fill: "#d33" }, svg);
  el("polyline", { fill: "none", stroke: "#2a6fdb", "stroke-width": 1.5,
    points: samples.map((s) => `${x(s.t)},${h - 2 - Math.min(1, s.util) * (h - 4)}`).join(" ") }, svg);
  el("text", { x: 4, y: 12, "font-size": 10 }, svg).textContent =
    `utilization, last ${Math.round(t1 - t0)} s (drops in red)`;
  return svg;
}

function select(label) {
  state.selected = label;
  const form = document.getElementById("change");
  form.hidden = false;
  document.getElementById("change-link").textContent = label;
  for (const [name, l] of state.graph.links) l.line.classList.toggle("selected", name === label);
  detail();
  redraw(); // the link's ends get their labels
}

// Posts the form's change: the same request as `netloom link set A B key=value...`.
async function apply(event) {
  if (event) event.preventDefault();
  const form = document.getElementById("change");
  const l = state.graph.links.get(state.selected);
  const set = {};
  for (const key of ["delay", "bw", "loss"]) {
    const v = form.elements[key].value.trim();
    if (v) set[key] = v;
  }
  const out = document.getElementById("change-result");
  const response = await fetch("/api/link", {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: "Bearer " + form.elements.token.value.trim() },
    body: JSON.stringify({ a: l.a, b: l.b, direction: form.elements.direction.value, set }),
  });
  const body = await response.json();
  out.textContent = response.ok ? `applied at ${(body.at_ns / 1e9).toFixed(3)} s` : `refused: ${body.error}`;
  document.body.dataset.change = response.ok ? "applied" : "refused " + response.status;
  return response.ok;
}

async function poll() {
  try {
    const response = await fetch("/api/stats");
    if (response.ok) update(await response.json());
    else document.getElementById("verdict").textContent = "no figures: " + (await response.json()).error;
  } catch (e) {
    document.getElementById("verdict").textContent = "the run does not answer (stopped?)";
  }
}

// `#selftest` (the headless browser test): once drawn, change the delay of link `link` (or the
// first) to `delay` through the form, as a user would, and say how it went in the body's data.
async function selftest() {
  while (!state.graph) await new Promise((r) => setTimeout(r, 50));
  select(params.get("link") || [...state.graph.links.keys()][0]);
  const form = document.getElementById("change");
  form.elements.delay.value = params.get("delay") || "7ms";
  form.elements.token.value = params.get("token") || "";
  await apply();
  document.body.dataset.selftest = "done";
}

document.getElementById("change").addEventListener("submit", apply);
initView(document.getElementById("graph"), redraw);
drawLegend(document.getElementById("legend"));
document.getElementById("open").addEventListener("change", (e) => {
  const file = e.target.files[0];
  if (file) file.text().then((t) => showSim(JSON.parse(t)));
});
document.getElementById("change").elements.token.value = params.get("token") || "";

fetch("/api/report").then(async (response) => {
  if (response.ok) return showSim(await response.json());
  const info = await fetch("/api/info").then((r) => (r.ok ? r.json() : {})).catch(() => ({}));
  state.positions = info.positions || {};
  await poll();
  setInterval(poll, POLL_MS);
  if (location.hash === "#selftest") selftest();
  else if (params.get("link") && state.graph) select(params.get("link")); // a link to share
});
