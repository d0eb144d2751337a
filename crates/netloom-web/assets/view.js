// Pan and zoom of the topology: the SVG's viewBox, kept at the element's own aspect ratio so
// one layout unit is `k` screen pixels both ways. The wheel zooms around the pointer, a drag
// pans, the buttons and keys (+, -, 0 or f to fit, arrows) do the same from the keyboard.
"use strict";

const view = {
  svg: null,
  x: 0, y: 0, k: 1, // the layout point at the element's top left, and pixels per unit
  fitK: 1,
  fitted: false, // showing what fit shows: a resize fits again
  bounds: null, // {x0, y0, x1, y1} of what fit shows
  changed: () => {}, // called (once per frame at most) after every change
  frame: 0,
};

// The element's size in pixels (never 0, so a hidden page cannot divide by it).
function viewSize() {
  const r = view.svg.getBoundingClientRect();
  return { w: Math.max(1, r.width), h: Math.max(1, r.height) };
}

function applyView() {
  const { w, h } = viewSize();
  view.svg.setAttribute("viewBox", `${view.x} ${view.y} ${w / view.k} ${h / view.k}`);
  if (!view.frame) view.frame = requestAnimationFrame(() => { view.frame = 0; view.changed(); });
}

// Shows all of `bounds`, centred, with a margin; at least 250 × 150 units across, so two
// nodes are not drawn a window apart (a force layout puts linked nodes 40 units apart).
function fitView(bounds) {
  if (bounds) view.bounds = bounds;
  const b = view.bounds, { w, h } = viewSize();
  const bw = Math.max(250, b.x1 - b.x0 + 60), bh = Math.max(150, b.y1 - b.y0 + 60);
  view.k = view.fitK = Math.min(w / bw, h / bh);
  view.fitted = true;
  view.x = (b.x0 + b.x1) / 2 - w / view.k / 2;
  view.y = (b.y0 + b.y1) / 2 - h / view.k / 2;
  applyView();
}

// Zooms by `factor` keeping the layout point under pixel (px, py) of the element where it is.
function zoomAt(px, py, factor) {
  view.fitted = false;
  const k = Math.min(view.fitK * 64, Math.max(view.fitK / 2, view.k * factor));
  view.x += px / view.k - px / k;
  view.y += py / view.k - py / k;
  view.k = k;
  applyView();
}

// Zooms by `factor` with layout point (x, y) in the middle of the element.
function zoomTo(x, y, factor) {
  view.fitted = false;
  const { w, h } = viewSize();
  view.k = Math.min(view.fitK * 64, Math.max(view.fitK / 2, view.fitK * factor));
  view.x = x - w / view.k / 2;
  view.y = y - h / view.k / 2;
  applyView();
}

function panBy(dxPixels, dyPixels) {
  view.fitted = false;
  view.x -= dxPixels / view.k;
  view.y -= dyPixels / view.k;
  applyView();
}

// The layout point `(x, y)` in the element's pixels.
function toScreen(x, y) {
  return [(x - view.x) * view.k, (y - view.y) * view.k];
}

// Wires the element's wheel, drag, resize and the page's keys and buttons. A press that moves
// less than 4 px is a click (a link still gets selected); more, a drag, after which the click
// that ends it is swallowed.
function initView(svg, changed) {
  view.svg = svg;
  view.changed = changed;
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = svg.getBoundingClientRect();
    zoomAt(e.clientX - r.left, e.clientY - r.top, Math.exp(-e.deltaY * (e.deltaMode ? 0.05 : 0.0015)));
  }, { passive: false });
  let drag = null;
  svg.addEventListener("pointerdown", (e) => {
    if (e.button === 0) drag = { x: e.clientX, y: e.clientY, moved: false, id: e.pointerId };
  });
  svg.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < 4) return;
    if (!drag.moved) { drag.moved = true; svg.setPointerCapture(drag.id); svg.classList.add("dragging"); }
    drag.x = e.clientX; drag.y = e.clientY;
    panBy(dx, dy);
  });
  const end = () => { svg.classList.remove("dragging"); setTimeout(() => { drag = null; }, 0); };
  svg.addEventListener("pointerup", end);
  svg.addEventListener("pointercancel", end);
  svg.addEventListener("click", (e) => { if (drag && drag.moved) e.stopPropagation(); }, true);
  const centre = (factor) => { const { w, h } = viewSize(); zoomAt(w / 2, h / 2, factor); };
  document.getElementById("zoom-in").addEventListener("click", () => centre(1.5));
  document.getElementById("zoom-out").addEventListener("click", () => centre(1 / 1.5));
  document.getElementById("zoom-fit").addEventListener("click", () => fitView());
  document.addEventListener("keydown", (e) => {
    if (!view.bounds || e.ctrlKey || e.metaKey || e.altKey || /INPUT|SELECT|TEXTAREA/.test(e.target.tagName)) return;
    const step = 60, keys = {
      "+": () => centre(1.5), "=": () => centre(1.5), "-": () => centre(1 / 1.5),
      "0": () => fitView(), f: () => fitView(),
      ArrowLeft: () => panBy(step, 0), ArrowRight: () => panBy(-step, 0),
      ArrowUp: () => panBy(0, step), ArrowDown: () => panBy(0, -step),
    };
    if (keys[e.key]) { e.preventDefault(); keys[e.key](); }
  });
  // A resized graph (the window, or the header wrapping) stays fitted if it was, else keeps
  // the zoom and the point in the middle.
  let size = viewSize();
  new ResizeObserver(() => {
    const now = viewSize();
    if (!view.bounds || (now.w === size.w && now.h === size.h)) return;
    const fitted = view.fitted;
    view.x += (size.w - now.w) / 2 / view.k;
    view.y += (size.h - now.h) / 2 / view.k;
    size = now;
    if (fitted) fitView(); else applyView();
    // Now, not at the next frame: this one is about to be painted (a headless screenshot
    // resizes the window just before it takes it).
    cancelAnimationFrame(view.frame);
    view.frame = 0;
    view.changed();
  }).observe(svg);
}
