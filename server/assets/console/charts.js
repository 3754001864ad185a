// Charts of the last 15 minutes, from the ring of samples the server keeps (one a second):
// requests per second by kind, request latency, fsync latency, lock grants and waits,
// sessions and connections.

import { get } from './api.js';
import { lineChart } from './chart.js';
import { el, every, updated } from './format.js';

// Operations charted by name; the rest are summed as "other".
const TOP_OPS = 5;
// The time shown: from the oldest sample kept, but at least this much.
const MIN_SPAN = 30 * 1000;

export function mount(main) {
  const grid = el('div', { id: 'charts', class: 'charts' }, el('p', { class: 'muted' }, 'Collecting samples…'));
  main.append(el('h2', {}, 'Charts'), el('p', { class: 'muted' }, 'Up to the last 15 minutes, one sample a second, kept by the server.'), grid);
  let samples = [];
  let span = 15 * 60 * 1000;
  return every(1000, async () => {
    const since = samples.length ? samples[samples.length - 1].t : undefined;
    const answer = await get('/api/charts', { since });
    span = answer.keep * answer.every_ms;
    samples = samples.concat(answer.samples);
    const now = samples.length ? samples[samples.length - 1].t : Date.now();
    samples = samples.filter((s) => s.t > now - span);
    const shown = samples.length ? Math.min(span, Math.max(MIN_SPAN, now - samples[0].t)) : span;
    if (samples.length) grid.replaceChildren(...charts(samples, now, shown));
    updated('charts');
  });
}

function charts(samples, now, span_ms) {
  const series = (name, pick) => ({ name, points: samples.map((s) => [s.t, pick(s)]) });
  // The busiest operations over the window, by name.
  const totals = new Map();
  for (const s of samples) for (const [op, rate] of s.requests) totals.set(op, (totals.get(op) || 0) + rate);
  const top = [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, TOP_OPS).map(([op]) => op);
  const rate = (s, op) => {
    const hit = s.requests.find(([name]) => name === op);
    return hit ? hit[1] : 0;
  };
  const requests = top.map((op) => series(op, (s) => rate(s, op)));
  if (totals.size > top.length) {
    requests.push(series('other', (s) => s.requests.filter(([op]) => !top.includes(op)).reduce((sum, [, r]) => sum + r, 0)));
  }
  const figure = (id, title, unit, lines) =>
    el('figure', { class: 'chart-box' }, el('figcaption', {}, title), lineChart({ id, title, unit, series: lines, now, span_ms }));
  return [
    figure('chart-requests', 'Requests per second, by kind', '/s', requests.length ? requests : [series('requests', () => 0)]),
    figure('chart-latency', 'Request latency (all kinds but lock waits)', ' ms', [
      series('p50', (s) => s.latency_p50_ms),
      series('p99', (s) => s.latency_p99_ms),
    ]),
    figure('chart-fsync', 'Log fsync latency', ' ms', [series('p50', (s) => s.fsync_p50_ms), series('p99', (s) => s.fsync_p99_ms)]),
    figure('chart-grants', 'Lock grants per second (after a wait)', '/s', [series('grants', (s) => s.lock_grants_per_s)]),
    figure('chart-waits', 'Lock wait before a grant', ' ms', [series('p50', (s) => s.lock_wait_p50_ms), series('p99', (s) => s.lock_wait_p99_ms)]),
    figure('chart-sessions', 'Sessions and connections', '', [series('sessions', (s) => s.sessions), series('connections', (s) => s.connections)]),
  ];
}
