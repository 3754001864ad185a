// Ensemble: the members with their roles, applied index, lag and contact with the leader
// (and a transfer of the leadership in progress), this member's own Raft figures, and the
// leader changes this server has seen.

import { get } from './api.js';
import { duration, el, every, number, time, updated } from './format.js';

export function mount(main) {
  const body = el('div', { id: 'ensemble' }, el('p', { class: 'muted' }, 'Loading…'));
  main.append(el('h2', {}, 'Ensemble'), body);
  return every(1000, async () => {
    const e = await get('/api/ensemble');
    body.replaceChildren(...render(e));
    updated('ensemble');
  });
}

function render(e) {
  const me = e.this_member;
  const own = me
    ? el(
        'dl',
        { class: 'stat', id: 'this-member' },
        [
          ['This member', me.id],
          ['Role', me.role],
          ['Term', me.term],
          ['Leader', me.leader ?? 'none known'],
          ['Last log index', number(me.last_log_index)],
          ['Applied index', number(me.applied_index)],
          ['Last zxid', number(e.last_zxid)],
          ['In contact with a leader', e.in_contact ? 'yes' : 'no'],
        ].map(([k, v]) => [el('dt', {}, k), el('dd', {}, String(v))]),
      )
    : el('p', {}, `A single server with its log in memory (no Raft group). Last zxid ${number(e.last_zxid)}.`);
  const members = el(
    'table',
    { id: 'members' },
    el('caption', {}, 'Members'),
    el('thead', {}, el('tr', {}, ['Id', 'Peer address', 'Role', 'Applied index', 'Lag (entries)', 'Contact with the leader'].map((h) => el('th', { scope: 'col' }, h)))),
    el(
      'tbody',
      {},
      e.members.map((m) =>
        el(
          'tr',
          { class: m.role === 'leader' ? 'selected' : null, 'data-member': String(m.id) },
          el('th', { scope: 'row' }, String(m.id)),
          el('td', { class: 'mono' }, m.addr || '—'),
          el('td', {}, m.role),
          el('td', { class: 'num' }, number(m.applied)),
          el('td', { class: 'num' }, number(m.lag)),
          contact(m, e),
        ),
      ),
    ),
  );
  const unknown = e.members.some((m) => m.contact === 'unknown');
  const note = el(
    'p',
    { class: 'muted' },
    unknown ? `Whether a member is reachable is known only to the leader${e.leader === null ? '' : ` (member ${e.leader})`}: open its console. ` : '',
    e.members.length > 1 ? 'To hand the leadership over: ward members transfer-leader [ID].' : '',
  );
  const changes = e.leader_changes.length
    ? el(
        'table',
        { id: 'leader-changes' },
        el('caption', {}, 'Leader changes seen by this server (newest first)'),
        el('thead', {}, el('tr', {}, ['When', 'Term', 'Leader'].map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', {}, [...e.leader_changes].reverse().map((c) => el('tr', {}, el('td', {}, time(c.at_ms)), el('td', { class: 'num' }, String(c.term)), el('td', {}, c.leader === null ? 'none (election)' : String(c.leader))))),
      )
    : el('p', { class: 'muted' }, 'No leader changes recorded (a single server has none).');
  const list = e.members_error ? [el('p', { class: 'error' }, `Member list unavailable: ${e.members_error}`)] : [members, note];
  return [own, ...list, changes];
}

// What the leader knows of its contact with member `m`; a dead member's figures are left
// out by the server, and this says why.
function contact(m, e) {
  switch (m.contact) {
    case 'leader':
      return el('td', { class: 'contact' }, e.handing_over_to === null ? 'leads' : `leads, handing over to ${e.handing_over_to}`);
    case 'reachable':
      return el('td', { class: 'contact' }, 'reachable');
    case 'unreachable':
      return el('td', { class: 'contact error' }, m.last_heard_ms === null ? 'unreachable (not heard from since this leader took over)' : `unreachable (last heard ${duration(m.last_heard_ms)} ago)`);
    default:
      return el('td', { class: 'contact muted' }, 'known to the leader only');
  }
}
