// A line chart drawn as SVG: time across, values up from zero, each line named at its
// right end in its own colour with its latest value, so there is no legend to look up.

const NS = 'http://www.w3.org/2000/svg';
// Okabe and Ito's palette: told apart with the common colour-vision deficiencies.
export const COLOURS = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#000000'];

const W = 560;
const H = 190;
const M = { left: 58, right: 150, top: 12, bottom: 26 };

function svg(tag, attrs, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

// A round number at or above `max`, for the top of the axis.
function ceiling(max) {
  if (!(max > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

function short(v) {
  if (v >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (v >= 1e4) return `${Math.round(v / 1e3)}k`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(1).replace(/\.0$/, '')}k`;
  if (v >= 100) return String(Math.round(v));
  if (v >= 10) return v.toFixed(1).replace(/\.0$/, '');
  return v.toFixed(2).replace(/\.?0+$/, '') || '0';
}

// series: [{name, points: [[t_ms, value|null], ...]}]; span_ms: the time shown, ending at `now`.
export function lineChart({ id, title, unit, series, now, span_ms }) {
  const width = W - M.left - M.right;
  const height = H - M.top - M.bottom;
  const start = now - span_ms;
  let max = 0;
  for (const s of series) for (const [, v] of s.points) if (v !== null && v > max) max = v;
  const top = ceiling(max);
  const x = (t) => M.left + ((t - start) / span_ms) * width;
  const y = (v) => M.top + height - (v / top) * height;

  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': `${id}-title ${id}-desc`, class: 'chart', id });
  const latest = series.map((s) => {
    const last = [...s.points].reverse().find(([, v]) => v !== null);
    return { name: s.name, value: last ? last[1] : null };
  });
  root.append(
    svg('title', { id: `${id}-title` }, title),
    svg('desc', { id: `${id}-desc` }, latest.map((l) => `${l.name}: ${l.value === null ? 'no data' : short(l.value) + unit}`).join('; ')),
  );
  // Axes: three values up the side, minutes back along the bottom.
  for (const v of [0, top / 2, top]) {
    root.append(svg('line', { x1: M.left, x2: M.left + width, y1: y(v), y2: y(v), class: 'grid' }));
    root.append(svg('text', { x: M.left - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, `${short(v)}${unit}`));
  }
  for (let k = 3; k >= 0; k--) {
    const back = (span_ms * k) / 3;
    const text = k === 0 ? 'now' : back < 180000 ? `−${Math.round(back / 1000)} s` : `−${Math.round(back / 60000)} min`;
    root.append(svg('text', { x: x(now - back), y: H - 8, 'text-anchor': 'middle', class: 'tick' }, text));
  }
  // Lines, broken where a value is missing.
  const labels = [];
  series.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length];
    let run = [];
    const flush = () => {
      if (run.length === 1) root.append(svg('circle', { cx: run[0][0], cy: run[0][1], r: 2, fill: colour, class: 'point' }));
      if (run.length > 1) root.append(svg('polyline', { points: run.map((p) => p.join(',')).join(' '), stroke: colour, class: 'line', 'data-series': s.name }));
      run = [];
    };
    for (const [t, v] of s.points) {
      if (v === null || t < start) flush();
      else run.push([x(t).toFixed(1), y(v).toFixed(1)]);
    }
    flush();
    const value = latest[i].value;
    labels.push({ y: value === null ? M.top + height : y(value), text: `${s.name} ${value === null ? '—' : short(value) + unit}`, colour });
  });
  // Direct labels, nudged apart so they never overlap.
  labels.sort((a, b) => a.y - b.y);
  for (let i = 1; i < labels.length; i++) labels[i].y = Math.max(labels[i].y, labels[i - 1].y + 13);
  // ... and pushed back up where they would run off the bottom.
  const bottom = M.top + height;
  for (let i = labels.length - 1; i >= 0; i--) {
    const limit = i === labels.length - 1 ? bottom : labels[i + 1].y - 13;
    labels[i].y = Math.min(labels[i].y, limit);
  }
  for (const l of labels) root.append(svg('text', { x: M.left + width + 6, y: l.y + 4, fill: l.colour, class: 'label' }, l.text));
  return root;
}
