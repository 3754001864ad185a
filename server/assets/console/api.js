// The console's calls to the JSON API (docs/console.md). Reads need nothing; actions send
// the admin token the user entered, which is kept for this tab only (sessionStorage).

const TOKEN_KEY = 'ward-admin-token';

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function url(path, params) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') query.set(k, String(v));
  }
  const q = query.toString();
  return q ? `${path}?${q}` : path;
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function answer(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) {
    const why = (body && body.error) || response.statusText;
    throw new ApiError(response.status, `${response.status}: ${why}`);
  }
  return body;
}

export async function get(path, params) {
  return answer(await fetch(url(path, params), { headers: { Accept: 'application/json' } }));
}

// An action: POST with the admin token as a bearer credential (none if none was entered:
// the server then refuses with 401).
export async function act(path, params) {
  const headers = { Accept: 'application/json' };
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  return answer(await fetch(url(path, params), { method: 'POST', headers }));
}
