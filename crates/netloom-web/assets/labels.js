// Node labels where there is room: at each view, labels are placed in order of importance (the
// node under the pointer and the selected link's ends, hosts, then the best connected routers)
// in the first of five spots around their node that is on screen and free of the labels and dots
// placed so far; a label with no free spot is hidden until a zoom makes room. The page then
// counts, from the boxes the browser drew, the shown labels that still overlap another
// (`data-label-overlaps` on the body: 0 unless placement is wrong) beside `data-labels`.
"use strict";

const LABEL_PX = 11; // font size on screen at every zoom
const CELL = 64; // the collision grid's cell, pixels

// The size of every node's label in pixels, from the browser's own boxes: drawn once at a known
// font size, so the estimate placement uses is the box the overlap count later reads.
function measureLabels(graph, layer) {
  layer.setAttribute("font-size", 100);
  for (const v of graph.nodes.values()) {
    v.label.setAttribute("x", 0);
    v.label.setAttribute("y", 0);
  }
  for (const v of graph.nodes.values()) {
    const b = v.label.getBBox();
    v.box = { w: (b.width * LABEL_PX) / 100, top: (b.y * LABEL_PX) / 100, h: (b.height * LABEL_PX) / 100 };
  }
}

// Boxes placed so far, bucketed by the grid cells they cover.
function collisions() {
  const grid = new Map();
  const cells = (b, f) => {
    for (let gx = Math.floor(b.x0 / CELL); gx <= Math.floor(b.x1 / CELL); gx++)
      for (let gy = Math.floor(b.y0 / CELL); gy <= Math.floor(b.y1 / CELL); gy++) f(gx + "," + gy);
  };
  return {
    add(b) { cells(b, (k) => (grid.get(k) || grid.set(k, []).get(k)).push(b)); },
    free(b, own) {
      let ok = true;
      cells(b, (k) => {
        for (const o of grid.get(k) || [])
          if (o !== own && o.x0 < b.x1 && b.x0 < o.x1 && o.y0 < b.y1 && b.y0 < o.y1) ok = false;
      });
      return ok;
    },
  };
}

// Shows the labels that fit at the current view and hides the others; `first` (names) are
// placed before all others. `radius(v)` is a node's dot radius in pixels.
function placeLabels(graph, first, radius) {
  const { w, h } = viewSize();
  const grid = collisions();
  const shown = [];
  const dots = new Map();
  for (const v of graph.nodes.values()) {
    const [sx, sy] = toScreen(v.x, v.y);
    v.sx = sx; v.sy = sy;
    if (sx < -10 || sy < -10 || sx > w + 10 || sy > h + 10) continue;
    const r = radius(v) + 1;
    const dot = { x0: sx - r, y0: sy - r, x1: sx + r, y1: sy + r };
    dots.set(v, dot);
    grid.add(dot);
  }
  const order = [...first].filter((n) => graph.nodes.has(n)).map((n) => graph.nodes.get(n))
    .concat(graph.ranked.filter((v) => !first.has(v.name)));
  const pad = 1.5;
  for (const v of order) {
    const dot = dots.get(v);
    v.label.setAttribute("display", "none");
    if (!dot) continue;
    const r = radius(v) + 1, b = v.box;
    // Right above, right below, right, left above, left below: the first that is free.
    const spots = [
      [v.sx + r, v.sy - r - b.h + 3], [v.sx + r, v.sy + r - 3], [v.sx + r + 2, v.sy - b.h / 2],
      [v.sx - r - b.w, v.sy - r - b.h + 3], [v.sx - r - b.w, v.sy + r - 3],
    ];
    for (const [left, top] of spots) {
      const box = { x0: left - pad, y0: top - pad, x1: left + b.w + pad, y1: top + b.h + pad };
      if (box.x0 < 0 || box.y0 < 0 || box.x1 > w || box.y1 > h || !grid.free(box, dot)) continue;
      grid.add(box);
      v.label.setAttribute("x", view.x + left / view.k);
      v.label.setAttribute("y", view.y + (top - b.top) / view.k);
      v.label.removeAttribute("display");
      shown.push(v);
      break;
    }
  }
  return shown;
}

// How many of the shown labels overlap another, by the boxes the browser drew (a sweep along
// x, so a few thousand labels cost little).
function labelOverlaps(shown) {
  const boxes = shown.map((v) => v.label.getBoundingClientRect()).sort((a, b) => a.left - b.left);
  const bad = new Set();
  for (let i = 0; i < boxes.length; i++)
    for (let j = i + 1; j < boxes.length && boxes[j].left < boxes[i].right - 0.5; j++) {
      const a = boxes[i], c = boxes[j];
      if (Math.min(a.bottom, c.bottom) - Math.max(a.top, c.top) > 0.5) { bad.add(i); bad.add(j); }
    }
  return bad.size;
}
