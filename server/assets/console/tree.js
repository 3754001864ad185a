// Tree: one node at a time, read lazily: its data (text or hex), full stat, ACL and
// ephemeral owner, and its children a page at a time. Deleting a node is an action for
// the admin.

import { act, get } from './api.js';
import { el, duration, number, say, sessionHref, time, treeHref } from './format.js';

const PAGE = 200;

export function mount(main, segments) {
  const path = segments.length && segments.some((s) => s) ? '/' + segments.filter((s) => s).join('/') : '/';
  const view = el('div', { id: 'tree-view' }, el('p', { class: 'muted' }, 'Loading…'));
  main.append(el('h2', {}, 'Tree'), crumbs(path), view);
  let stopped = false;
  load(path, view, () => stopped);
  return () => {
    stopped = true;
  };
}

function crumbs(path) {
  const parts = path.split('/').filter((p) => p);
  const items = [el('li', {}, el('a', { href: treeHref('/') }, '/'))];
  let at = '';
  for (const [i, part] of parts.entries()) {
    at += '/' + part;
    const last = i === parts.length - 1;
    items.push(el('li', {}, el('a', { href: treeHref(at), 'aria-current': last ? 'location' : null }, part)));
  }
  return el('nav', { 'aria-label': 'Path', class: 'crumbs' }, el('ol', {}, items));
}

async function load(path, view, stopped) {
  let node;
  try {
    node = await get('/api/tree', { path, limit: PAGE });
  } catch (e) {
    if (!stopped()) view.replaceChildren(el('p', { class: 'error' }, `Cannot read ${path}: ${e.message}`));
    return;
  }
  if (stopped()) return;
  const children = el('ul', { id: 'children', class: 'children' });
  const more = el('button', { type: 'button', id: 'children-more' }, 'Show more children');
  const addChildren = (page) => {
    children.append(...page.names.map((name) => el('li', {}, el('a', { href: treeHref(join(path, name)) }, name))));
    more.hidden = !page.next;
    more.dataset.after = page.next || '';
  };
  more.addEventListener('click', async () => {
    const next = await get('/api/tree', { path, after: more.dataset.after, limit: PAGE });
    addChildren(next.children);
  });
  addChildren(node.children);
  view.replaceChildren(
    el(
      'div',
      { class: 'columns' },
      el(
        'section',
        { 'aria-labelledby': 'node-title', class: 'node' },
        el('h3', { id: 'node-title', class: 'mono' }, node.path),
        el('p', {}, el('span', { class: 'badge' }, node.kind), node.ttl_ms ? ` TTL ${duration(node.ttl_ms)}` : '', owner(node)),
        data(node.data),
        stat(node.stat),
        el('h4', {}, 'ACL'),
        el('ul', { id: 'acl', class: 'plain mono' }, node.acl.map((a) => el('li', {}, a))),
        path === '/' ? null : remove(node),
      ),
      el(
        'section',
        { 'aria-labelledby': 'children-title', class: 'kids' },
        el('h3', { id: 'children-title' }, `Children (${number(node.children.total)})`),
        node.children.total === 0 ? el('p', { class: 'muted' }, 'None.') : children,
        more,
      ),
    ),
  );
}

function join(dir, name) {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

function owner(node) {
  const who = node.ephemeral_owner;
  if (!who) return null;
  const extra = [who.owner, who.client].filter((x) => x).join(', ');
  return el('span', {}, ' owned by session ', el('a', { href: sessionHref(who.session), class: 'mono' }, who.session), extra ? ` (${extra})` : '');
}

function data(d) {
  const text = el('pre', { id: 'data-text', class: 'data' }, d.text !== null ? d.text : '(not UTF-8 text: see hex)');
  const hex = el('pre', { id: 'data-hex', class: 'data', hidden: true }, d.hex.replace(/(..)/g, '$1 ').trim());
  const pick = (mode) => {
    text.hidden = mode !== 'text';
    hex.hidden = mode !== 'hex';
  };
  const radio = (mode, label) =>
    el('label', {}, el('input', { type: 'radio', name: 'data-mode', value: mode, checked: mode === (d.text !== null ? 'text' : 'hex'), onchange: () => pick(mode) }), ` ${label}`);
  pick(d.text !== null ? 'text' : 'hex');
  return el(
    'div',
    { class: 'datablock' },
    el('h4', {}, `Data (${number(d.size)} bytes${d.truncated ? ', first part shown' : ''})`),
    el('fieldset', { class: 'inline' }, el('legend', { class: 'sr-only' }, 'Show data as'), radio('text', 'Text'), radio('hex', 'Hex')),
    d.size === 0 ? el('p', { class: 'muted' }, 'Empty.') : [text, hex],
  );
}

function stat(s) {
  const rows = [
    ['czxid', s.czxid],
    ['mzxid', s.mzxid],
    ['pzxid', s.pzxid],
    ['ctime', `${time(s.ctime)} (${s.ctime})`],
    ['mtime', `${time(s.mtime)} (${s.mtime})`],
    ['version', s.version],
    ['cversion', s.cversion],
    ['aversion', s.aversion],
    ['ephemeralOwner', s.ephemeralOwner],
    ['dataLength', s.dataLength],
    ['numChildren', s.numChildren],
  ];
  return el(
    'div',
    {},
    el('h4', {}, 'Stat'),
    el('dl', { id: 'stat', class: 'stat' }, rows.map(([k, v]) => [el('dt', {}, k), el('dd', { class: 'mono', 'data-stat': k }, String(v))])),
  );
}

function remove(node) {
  const box = el('div', { class: 'actions' });
  const ask = el('button', { type: 'button', id: 'delete-node', class: 'danger' }, 'Delete node…');
  ask.addEventListener('click', () => {
    const confirm = el('button', { type: 'button', id: 'delete-confirm', class: 'danger' }, `Delete ${node.path}`);
    const cancel = el('button', { type: 'button' }, 'Cancel');
    cancel.addEventListener('click', () => box.replaceChildren(ask));
    confirm.addEventListener('click', async () => {
      try {
        await act('/api/tree/delete', { path: node.path, version: node.stat.version });
        say(`Deleted ${node.path}.`, 'ok');
        location.hash = treeHref(node.path.replace(/\/[^/]*$/, '') || '/');
      } catch (e) {
        say(`Refused: ${e.message}`, 'error');
        box.replaceChildren(ask);
      }
    });
    box.replaceChildren(el('span', {}, 'Delete this node (version ', String(node.stat.version), ')? '), confirm, ' ', cancel);
    confirm.focus();
  });
  box.append(ask);
  return box;
}
