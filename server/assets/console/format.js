// Small helpers shared by the views: building elements, and writing durations, times and
// numbers for people.

// el('td', {class: 'x'}, 'text', child): attributes are set as attributes; `on*` as
// listeners. Text is always text (no HTML is ever parsed from data).
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function duration(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.floor(s % 60)} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

export function time(ms) {
  if (!ms) return '—';
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

export function number(n, digits = 1) {
  if (n === null || n === undefined || Number.isNaN(n)) return '—';
  if (Math.abs(n) >= 1000) return Math.round(n).toLocaleString('en');
  if (Number.isInteger(n)) return String(n);
  return n.toFixed(digits);
}

// The link to a node in the tree view.
export function treeHref(path) {
  if (path === '/') return '#/tree';
  return '#/tree' + path.split('/').map(encodeURIComponent).join('/');
}

export function sessionHref(id) {
  return `#/sessions/${encodeURIComponent(id)}`;
}

// Says something in the status line (read out by screen readers).
export function say(text, kind) {
  const status = document.getElementById('status');
  status.textContent = text;
  status.className = kind || '';
}

export function updated(what) {
  document.getElementById('updated').textContent = `${what} · updated ${new Date().toLocaleTimeString()}`;
}

// Runs `task` now and then `ms` after each run ends (never two at once), skipping runs
// while the tab is hidden; returns the function that stops it.
export function every(ms, task) {
  let timer = null;
  let stopped = false;
  async function run() {
    if (stopped) return;
    if (!document.hidden) {
      try {
        await task();
      } catch (e) {
        say(`Could not update: ${e.message}`, 'error');
      }
    }
    if (!stopped) timer = setTimeout(run, ms);
  }
  run();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

// Re-renders `container` with `render`, giving focus back to the link or button it was on
// (same href, or same data-key), so a refresh every second does not throw keyboard users
// out of the list.
export function keepingFocus(container, render) {
  const active = document.activeElement;
  const inside = active && container.contains(active) && active !== container;
  const href = inside ? active.getAttribute('href') : null;
  const key = inside ? active.dataset.key : null;
  render();
  if (!inside) return;
  const again = href
    ? container.querySelector(`[href="${CSS.escape(href)}"]`)
    : key
      ? container.querySelector(`[data-key="${CSS.escape(key)}"]`)
      : null;
  if (again) again.focus();
}
