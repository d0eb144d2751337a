// The tooltip of the node under the pointer (or keyboard focus): its name and, for each of its
// links, the load, rate, queue and drops of the last poll in each direction, so a node whose
// label has no room at this zoom can still be read.
"use strict";

const tip = { node: null, x: 0, y: 0 };

function showTip(name, x, y) {
  tip.node = name; tip.x = x; tip.y = y;
  renderTip();
}

function hideTip(name) {
  if (name && tip.node !== name) return;
  tip.node = null;
  document.getElementById("tip").hidden = true;
}

// Redrawn on every poll while shown, so its figures stay live.
function renderTip() {
  const box = document.getElementById("tip");
  const graph = state.graph;
  if (!tip.node || !graph || !graph.nodes.has(tip.node)) { box.hidden = true; return; }
  const v = graph.nodes.get(tip.node);
  const rows = v.links.map((label) => {
    const l = graph.links.get(label);
    return (l.now || []).filter((d) => d.from === tip.node || d.to === tip.node).map((d) => {
      const other = d.from === tip.node ? `→ ${d.to}` : `← ${d.from}`;
      return `<tr><td>${other}</td><td><span class="swatch" style="background:${heatColour(d.util)}"></span>` +
        `${(100 * d.util).toFixed(0)} %</td><td>${(d.bps / 1e6).toFixed(2)} Mbit/s</td>` +
        `<td>q ${d.queue}</td><td>${d.drops ? d.drops + " drops" : ""}</td></tr>`;
    }).join("");
  }).join("");
  box.innerHTML = `<strong>${tip.node}</strong> ${v.host ? "host" : "router"}, ${v.links.length} link(s)` +
    (rows ? `<table>${rows}</table>` : "");
  box.hidden = false;
  // Beside the pointer, kept inside the graph.
  const stage = box.parentElement.getBoundingClientRect();
  const left = Math.min(tip.x + 14, stage.width - box.offsetWidth - 4);
  const top = tip.y + 14 + box.offsetHeight > stage.height ? tip.y - box.offsetHeight - 8 : tip.y + 14;
  box.style.left = Math.max(4, left) + "px";
  box.style.top = Math.max(4, top) + "px";
}
