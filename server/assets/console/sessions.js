// Sessions: every session with its owner, client, protocol, timeout, when this server last
// heard from it, and what it owns; one selected session's ephemeral nodes. Expiring a
// session (the way to free a lock whose holder is stuck) is an action for the admin.

import { act, get } from './api.js';
import { el, duration, every, keepingFocus, number, say, sessionHref, treeHref } from './format.js';

export function mount(main, params) {
  const selected = params[0] || null;
  const summary = el('p', { id: 'session-summary', class: 'muted' }, 'Loading…');
  const body = el('tbody', {});
  const detail = el('section', { id: 'session-detail', 'aria-labelledby': 'session-detail-title', hidden: !selected });
  const heads = ['Session', 'Owner', 'Protocol', 'Client', 'Timeout', 'Last heard', 'Ephemerals', 'Watches', 'Locks held', 'Waiting', 'Action'];
  main.append(
    el('h2', {}, 'Sessions'),
    summary,
    el(
      'div',
      { class: 'scroll' },
      el(
        'table',
        { id: 'sessions' },
        el('caption', { class: 'sr-only' }, 'Sessions'),
        el('thead', {}, el('tr', {}, heads.map((h) => el('th', { scope: 'col' }, h)))),
        body,
      ),
    ),
    detail,
  );
  // The row whose expiry is being confirmed survives refreshes.
  let confirming = null;

  async function refresh() {
    const list = await get('/api/sessions', { detail: selected });
    const one = list.detail;
    summary.textContent = `${number(list.total)} session${list.total === 1 ? '' : 's'}${list.sessions.length < list.total ? `, first ${list.sessions.length} shown` : ''}.`;
    keepingFocus(body, () => body.replaceChildren(...list.sessions.map(row)));
    if (selected) keepingFocus(detail, () => showDetail(one));
  }

  function row(s) {
    return el(
      'tr',
      { 'data-session': s.id, class: s.id === selected ? 'selected' : null },
      el('th', { scope: 'row' }, el('a', { href: sessionHref(s.id), class: 'mono' }, s.id)),
      el('td', {}, s.owner || '—'),
      el('td', {}, s.protocol || (s.connected ? '' : 'not connected here')),
      el('td', { class: 'mono' }, s.client || '—'),
      el('td', { class: 'num' }, duration(s.timeout_ms)),
      el('td', { class: 'num' }, s.heard_ms_ago === null ? '—' : `${duration(s.heard_ms_ago)} ago`),
      el('td', { class: 'num' }, number(s.ephemerals)),
      el('td', { class: 'num' }, number(s.watches)),
      el('td', { class: 'num' }, number(s.locks_held)),
      el('td', { class: 'num' }, number(s.locks_waiting)),
      el('td', {}, expireControl(s.id)),
    );
  }

  function expireControl(id) {
    if (confirming !== id) {
      return el('button', { type: 'button', class: 'danger', 'data-key': `expire-${id}`, onclick: () => ask(id) }, 'Expire…');
    }
    return el(
      'span',
      { class: 'confirm' },
      el('button', { type: 'button', class: 'danger', 'data-key': `confirm-${id}`, onclick: () => expire(id) }, `Expire ${id}`),
      ' ',
      el('button', { type: 'button', 'data-key': `cancel-${id}`, onclick: () => { confirming = null; refresh(); } }, 'Cancel'),
    );
  }

  async function ask(id) {
    confirming = id;
    await refresh();
    const button = body.querySelector(`[data-key="confirm-${CSS.escape(id)}"]`);
    if (button) button.focus();
  }

  async function expire(id) {
    confirming = null;
    try {
      await act('/api/sessions/expire', { id });
      say(`Session ${id} expired: its ephemeral nodes are gone and its locks passed on.`, 'ok');
    } catch (e) {
      say(`Refused: ${e.message}`, 'error');
    }
    await refresh();
  }

  function showDetail(one) {
    if (!one) {
      detail.replaceChildren(el('h3', { id: 'session-detail-title' }, `Session ${selected}`), el('p', { class: 'muted' }, 'It has ended.'));
      return;
    }
    detail.replaceChildren(
      el('h3', { id: 'session-detail-title' }, `Session ${one.id}${one.owner ? ` (${one.owner})` : ''}`),
      el('p', {}, `${number(one.ephemerals)} ephemeral node${one.ephemerals === 1 ? '' : 's'}, ${number(one.locks_held)} lock${one.locks_held === 1 ? '' : 's'} held, ${number(one.locks_waiting)} waited for.`),
      one.ephemeral_paths.length === 0
        ? el('p', { class: 'muted' }, 'No ephemeral nodes.')
        : el(
            'ul',
            { id: 'ephemerals', class: 'plain' },
            one.ephemeral_paths.map((e) =>
              el('li', {}, el('a', { href: treeHref(e.path), class: 'mono' }, e.path), e.lock ? [' ', el('span', { class: `badge ${e.lock === 'holds' ? 'ok' : 'wait'}` }, e.lock)] : null),
            ),
          ),
    );
  }

  return every(1000, refresh);
}
