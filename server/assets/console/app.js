// The console's shell: the views behind the navigation (hash routes, so the back button
// and bookmarks work), the admin token form, and live polling of the visible view.

import { setToken, token } from './api.js';
import * as locks from './locks.js';
import * as tree from './tree.js';
import * as sessions from './sessions.js';
import * as ensemble from './ensemble.js';
import * as charts from './charts.js';

const VIEWS = { locks, tree, sessions, ensemble, charts };

let stop = null;

function route() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [name, ...rest] = hash.split('/');
  const view = VIEWS[name] ? name : 'locks';
  if (stop) stop();
  const main = document.getElementById('main');
  main.replaceChildren();
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.view === view) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `Ward console: ${view}`;
  stop = VIEWS[view].mount(main, rest.map(decodeURIComponent));
}

function showToken() {
  const state = document.getElementById('token-state');
  state.textContent = token() ? 'set for this tab: actions are sent with it' : 'none: actions will be refused';
}

document.getElementById('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = document.getElementById('token');
  setToken(input.value.trim());
  input.value = '';
  showToken();
});

window.addEventListener('hashchange', route);
showToken();
route();
