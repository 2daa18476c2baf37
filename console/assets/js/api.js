// The console's only way to the server: the public API under /v1 with the
// bearer token the user signed in with. The token lives in sessionStorage,
// so it is gone when the tab closes and is never sent to any other origin
// (the Content-Security-Policy allows connections to this origin only).

const TOKEN_KEY = 'compute.console.token';

/** An error answer of the API: {"error": {"code", "message"}}. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

/** The signed-in token, kept for this tab only. */
export const session = {
  token: () => sessionStorage.getItem(TOKEN_KEY) || '',
  set: (t) => sessionStorage.setItem(TOKEN_KEY, t),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** Called when the API answers 401: the token was revoked or is wrong. */
let onUnauthenticated = () => {};
export function setUnauthenticatedHandler(fn) { onUnauthenticated = fn; }

/**
 * Called with the error's message when the API answers 403
 * TENANT_SUSPENDED to the signed-in token: every request of the tenant's
 * tokens is refused until an operator resumes it.
 */
let onSuspended = () => {};
export function setSuspendedHandler(fn) { onSuspended = fn; }

/**
 * A fresh Idempotency-Key, one per click of a button that creates or
 * extends: the API replays the first answer for a repeated key, so a retry
 * of the same click (after a dropped connection) cannot book twice.
 * crypto.getRandomValues works on plain-HTTP origins, randomUUID does not.
 */
export function idempotencyKey() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return 'console-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

/** Builds /v1/path?query from an object, leaving out empty values. */
export function url(path, query = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const s = q.toString();
  return `/v1${path}${s ? '?' + s : ''}`;
}

/**
 * Calls the API and returns the decoded JSON. Writes that carry an
 * Idempotency-Key are retried once on a network failure with the same key,
 * which is exactly what the key is for.
 */
export async function call(method, path, {query, body, headers = {}, token = session.token()} = {}) {
  const init = {method, headers: {Accept: 'application/json', ...headers}, cache: 'no-store'};
  if (token) init.headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(url(path, query), init);
  } catch (err) {
    if (!headers['Idempotency-Key']) throw new ApiError(0, 'NETWORK', `cannot reach the server: ${err.message}`);
    res = await fetch(url(path, query), init);
  }
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { /* not JSON: keep the text for the message */ }
  if (!res.ok) {
    const e = data && data.error ? data.error : {};
    // Only the signed-in token's refusal signs out; a token being tried
    // at sign-in just fails.
    if (res.status === 401 && token && token === session.token()) onUnauthenticated(e.message);
    if (e.code === 'TENANT_SUSPENDED' && token && token === session.token()) onSuspended(e.message);
    throw new ApiError(res.status, e.code || `HTTP_${res.status}`, e.message || text || res.statusText);
  }
  return data;
}

export const get = (path, query, opts) => call('GET', path, {...opts, query});

/**
 * Reads every page of a list ({"items", "nextCursor"}), at most maxPages
 * pages, and returns the items; truncated is set on the array when pages
 * were left unread.
 */
export async function listAll(path, query = {}, maxPages = 20) {
  const items = [];
  let cursor = '';
  // The event log continues from ?after=, every other list from ?cursor=
  // (a list refuses a parameter it does not take).
  const param = path === '/events' ? 'after' : 'cursor';
  for (let i = 0; i < maxPages; i++) {
    const page = await get(path, {...query, [param]: cursor});
    items.push(...page.items);
    cursor = page.nextCursor;
    // The event log never ends (it always gives a cursor): an empty page does.
    if (!cursor || !page.items.length) return items;
  }
  items.truncated = true;
  return items;
}

/**
 * GETs an endpoint that this server may not have yet (GET /v1/sites,
 * /v1/pools, /v1/tenants/{t}/quotas): null when the route is unknown (404
 * or 405), the answer otherwise. The console then falls back to what it
 * can derive from the endpoints that exist.
 */
export async function optional(path, query) {
  try {
    return await get(path, query);
  } catch (err) {
    if (err.status === 404 || err.status === 405) return null;
    throw err;
  }
}

/** The items of a list answer, whether paged ({"items"}) or a bare array. */
export function itemsOf(answer) {
  if (!answer) return [];
  return Array.isArray(answer) ? answer : (answer.items || []);
}
