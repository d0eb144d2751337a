// Link heat: the colour and on-screen width of a link for its utilization over the last poll,
// and the legend in the header that explains them. Widths are screen pixels (the lines are drawn
// with a non-scaling stroke), so a hot link reads the same at every zoom.
"use strict";

// Below this a link counts as idle: a few pings must not colour a gigabit link.
const IDLE_BELOW = 0.005;
const IDLE_COLOUR = "#c4c4c4";

// Idle links are light grey, so that any load stands out; loaded ones go from yellow (a few
// percent) through orange to red (saturated), darker as they warm, so the scale reads on a light
// background and for the common red-green colour blindness (the ramp is also one of lightness).
function heatColour(u) {
  if (!(u >= IDLE_BELOW)) return IDLE_COLOUR;
  const t = Math.min(1, u);
  const hue = 52 * (1 - t), light = 52 - 8 * t;
  return `hsl(${hue.toFixed(1)}, 92%, ${light.toFixed(1)}%)`;
}

// Pixels: idle links thin, loaded ones from 2.5 px to 7 px with their load, and up to 4 px more
// for a queue (packets queued now, on a log scale). `big` topologies draw idle links thinner still.
function heatWidth(u, queue, big) {
  const base = u >= IDLE_BELOW ? 2.5 + 4.5 * Math.min(1, u) : big ? 0.8 : 1.5;
  return base + Math.min(4, Math.log2(1 + (queue || 0)));
}

// Fills the header's legend: the idle swatch, the ramp from 1 % to 100 % (drawn from heatColour
// itself, so it cannot disagree with the links), and what width and opacity say.
function drawLegend(box) {
  const stops = [0.01, 0.25, 0.5, 0.75, 1].map((u) => `${heatColour(u)} ${u * 100}%`).join(", ");
  box.innerHTML =
    `<span class="swatch" style="background:${IDLE_COLOUR}"></span>idle ` +
    `<span class="ramp" style="background:linear-gradient(to right, ${stops})"></span>100 % ` +
    `<span class="note">load</span>`;
  box.title = "a link's load over the last second, in its busier direction; thicker: busier, " +
    "or packets queued; opaque: it dropped packets";
}
