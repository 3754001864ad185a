// Locks: every lock directory with its queue in order (holders first, as the queue's rule
// has it), refreshed every second so a handoff shows as it happens.

import { get } from './api.js';
import { el, duration, every, keepingFocus, number, sessionHref, treeHref } from './format.js';

const PAGE = 200;

export function mount(main) {
  let prefix = '';
  let limit = PAGE;
  const filter = el('input', { id: 'lock-prefix', type: 'search', placeholder: '/locks/', spellcheck: 'false' });
  const summary = el('p', { id: 'lock-summary', class: 'muted' }, 'Loading…');
  const list = el('div', { id: 'lock-list' });
  const more = el('button', { type: 'button', id: 'lock-more', hidden: true }, 'Show more');
  filter.addEventListener('input', () => {
    prefix = filter.value.trim();
    limit = PAGE;
    refresh();
  });
  more.addEventListener('click', () => {
    limit += PAGE;
    refresh();
  });
  main.append(
    el('h2', {}, 'Locks'),
    el('div', { class: 'toolbar' }, el('label', { for: 'lock-prefix' }, 'Path prefix'), filter, summary),
    list,
    more,
  );

  let seq = 0;
  async function refresh() {
    const mine = ++seq;
    const answer = await get('/api/locks', { prefix: prefix || undefined, limit });
    // A slower, older answer must not overwrite a newer one (typing in the filter).
    if (mine !== seq) return;
    render(answer);
  }

  function render(answer) {
    const shown = answer.directories.length;
    summary.textContent =
      answer.total === 0
        ? `No lock directories${prefix ? ` under ${prefix}` : ''}.`
        : `${number(answer.total)} lock director${answer.total === 1 ? 'y' : 'ies'}` +
          `${prefix ? ` under ${prefix}` : ''}${shown < answer.total ? `, first ${number(shown)} shown` : ''}.`;
    more.hidden = !answer.next;
    // Most seconds nothing but the clock moved: then only the durations are rewritten,
    // which keeps a long list cheap to refresh (and focus where it was).
    const shape = JSON.stringify(answer.directories.map((d) => [d.path, d.holders, d.waiters, d.queue.map((c) => [c.name, c.holds, c.owner, c.client, c.token])]));
    if (shape === lastShape) {
      const cells = list.querySelectorAll('td.for');
      let i = 0;
      for (const dir of answer.directories) for (const c of dir.queue) if (cells[i]) cells[i++].textContent = since(c, answer.now_ms);
      return;
    }
    lastShape = shape;
    keepingFocus(list, () => list.replaceChildren(...answer.directories.map((dir) => directory(dir, answer.now_ms))));
  }
  let lastShape = null;

  const stop = every(1000, refresh);
  return stop;
}

function directory(dir, now) {
  const id = `lock-${dir.path.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const counts = `${dir.holders} holding, ${dir.waiters} waiting`;
  const rows = dir.queue.map((c, i) =>
    el(
      'tr',
      { class: c.holds ? 'holds' : 'waits', 'data-session': c.session, 'data-name': c.name },
      el('td', {}, String(i + 1)),
      el('td', {}, el('span', { class: `badge ${c.holds ? 'ok' : 'wait'}` }, c.holds ? 'holds' : 'waits')),
      el('td', {}, el('a', { href: sessionHref(c.session), class: 'mono' }, c.session)),
      el('td', {}, c.owner || '—'),
      el('td', { class: 'mono' }, c.client || '—'),
      el('td', { class: 'data' }, context(c.data)),
      el('td', { class: 'num' }, String(c.token)),
      el('td', { class: 'num for' }, since(c, now)),
    ),
  );
  const more = dir.holders + dir.waiters - dir.queue.length;
  return el(
    'section',
    { class: 'lock', 'aria-labelledby': id, 'data-path': dir.path },
    el(
      'h3',
      { id },
      el('a', { href: treeHref(dir.path), class: 'mono' }, dir.path),
      ' ',
      el('span', { class: 'badge' }, dir.permits ? `${dir.kind} (${dir.permits} permits)` : dir.kind),
      ' ',
      el('span', { class: 'muted small' }, counts),
    ),
    el(
      'table',
      {},
      el('caption', { class: 'sr-only' }, `Queue of ${dir.path}, in order: ${counts}`),
      el(
        'thead',
        {},
        el('tr', {}, ...['#', 'State', 'Session', 'Owner', 'Client', 'Context', 'Fencing token', 'For'].map((h) => el('th', { scope: 'col' }, h))),
      ),
      el('tbody', {}, rows),
    ),
    more > 0 ? el('p', { class: 'muted small' }, `and ${number(more)} more in the queue`) : null,
  );
}

function since(c, now) {
  return c.holds ? `held ${duration(now - c.held_since_ms)}` : `waiting ${duration(now - c.queued_ms)}`;
}

function context(data) {
  if (!data || data.size === 0) return el('span', { class: 'muted' }, '—');
  const text = data.text !== null && data.text !== undefined ? data.text : `0x${data.hex}`;
  return (data.truncated ? `${text}…` : text);
}
