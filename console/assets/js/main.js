// The console's shell: sign-in, the header with its navigation and the
// stream status, and a hash router (#/fleet, #/reservations/rsv_…) so that
// every page has an address the server never needs to know about: it
// serves one index.html, and each page reads the API from the browser.

import {h, replace, notice} from './dom.js';
import {session, get, setUnauthenticatedHandler, setSuspendedHandler} from './api.js';
import {Live} from './live.js';
import * as fleet from './pages/fleet.js';
import * as node from './pages/node.js';
import * as timeline from './pages/timeline.js';
import * as reservations from './pages/reservations.js';
import * as reservation from './pages/reservation.js';
import * as capacity from './pages/capacity.js';
import * as events from './pages/events.js';
import * as webhooks from './pages/webhooks.js';

/** Routes, first match wins; nav is the menu entry that is current there. */
const routes = [
  {re: /^\/fleet$/, page: fleet, nav: 'fleet', operator: true},
  {re: /^\/nodes\/([^/]+)$/, page: node, nav: 'fleet', operator: true},
  {re: /^\/timeline$/, page: timeline, nav: 'timeline'},
  {re: /^\/reservations$/, page: reservations, nav: 'reservations'},
  {re: /^\/reservations\/([^/]+)$/, page: reservation, nav: 'reservations'},
  {re: /^\/capacity$/, page: capacity, nav: 'capacity'},
  {re: /^\/events$/, page: events, nav: 'events'},
  {re: /^\/webhooks$/, page: webhooks, nav: 'webhooks'},
];

/** The menu; operators see the fleet, tenants their quotas. */
function menu(me) {
  const op = me.role === 'operator';
  return [
    op && ['fleet', 'Fleet'],
    ['timeline', 'Timeline'],
    ['reservations', 'Reservations'],
    ['capacity', op ? 'Capacity' : 'Quotas'],
    ['events', 'Events'],
    ['webhooks', 'Webhooks'],
  ].filter(Boolean);
}

const app = document.getElementById('app');
let current = null; // {me, live, cleanups}
let pageCleanups = []; // of the page shown

function signOut(message) {
  pageCleanups.forEach((fn) => fn());
  pageCleanups = [];
  if (current) {
    current.live.stop();
    current.cleanups.forEach((fn) => fn());
    current = null;
  }
  session.clear();
  showSignIn(message);
}

function showSignIn(message) {
  document.title = 'Sign in · Better Compute';
  const input = h('input', {id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true,
    spellcheck: 'false', placeholder: 'bc_…', 'aria-describedby': 'token-help'});
  const status = h('div', {id: 'signin-status'}, message ? notice('error', message) : null);
  const form = h('form', {id: 'signin', class: 'signin card'},
    h('h1', {}, 'Sign in'),
    h('label', {for: 'token'}, 'API token'),
    input,
    h('p', {id: 'token-help', class: 'muted'},
      'An operator or tenant token (compute tokens create, or the tokens `compute serve --demo` prints). ',
      'It is kept in this tab only and sent to this server only.'),
    h('button', {type: 'submit', class: 'btn btn-primary'}, 'Sign in'),
    status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const token = input.value.trim();
    try {
      const me = await get('/whoami', {}, {token});
      session.set(token);
      start(me, token);
    } catch (err) {
      replace(status, notice('error', err.status === 401 ? 'That token is not valid.' : err.message));
    }
  });
  replace(app, h('main', {class: 'signin-page'}, h('div', {class: 'brand-large'}, logo(), 'Better Compute'), form));
  input.focus();
}

function logo() {
  return h('img', {src: 'favicon.svg', alt: '', width: 28, height: 28, class: 'logo'});
}

/**
 * What the console says when the tenant is suspended: the server's message
 * names the tenant and the operator's reason.
 */
function suspendedText(message) {
  const said = message ? message.charAt(0).toUpperCase() + message.slice(1) : 'Your tenant is suspended';
  return [h('strong', {}, `${said}.`), ' Every request with this token is refused until an operator resumes the tenant, ',
    'and live updates have stopped. Reload this page once it is resumed.'];
}

/**
 * Shows, above every page until a reload, why the event stream stopped for
 * good: the tenant suspended, or another refusal reconnecting cannot cure.
 */
function showRefusal(el, refusal) {
  replace(el, refusal.code === 'TENANT_SUSPENDED'
    ? notice('error', ...suspendedText(refusal.message))
    : notice('error', h('strong', {}, 'Live updates stopped. '),
      `The server refused the event stream (${refusal.code}): ${refusal.message}. Reload this page to try again.`));
}

function start(me, token) {
  const refusalEl = h('div', {id: 'stream-refusal', class: 'stream-refusal'});
  const live = new Live(token, () => signOut('The token was revoked or has expired: sign in again.'),
    (refusal) => showRefusal(refusalEl, refusal));
  current = {me, live, cleanups: []};
  const status = h('span', {id: 'stream-status', class: 'stream-status', role: 'status'});
  current.cleanups.push(live.onStatus((s) => {
    status.dataset.state = s.state;
    status.dataset.reconnects = String(s.reconnects);
    const label = {live: 'live', connecting: 'connecting…', reconnecting: 'reconnecting…',
      suspended: 'stopped: tenant suspended', refused: 'stopped: refused'}[s.state] || s.state;
    status.textContent = (s.reconnects ? `${label} · resumed ${s.reconnects}×` : label) +
      (s.gaps ? ` · ${s.gaps} gap${s.gaps > 1 ? 's' : ''} (log pruned)` : '');
    status.setAttribute('aria-label', `event stream ${status.textContent}`);
    status.title = s.lastEventId ? `last event position ${s.lastEventId}` : '';
  }));
  const nav = h('nav', {'aria-label': 'Main'}, h('ul', {},
    menu(me).map(([key, label]) => h('li', {}, h('a', {href: `#/${key}`, dataset: {nav: key}}, label)))));
  const who = h('span', {id: 'whoami', class: 'who', title: `identity ${me.identity}`},
    h('span', {class: 'who-tenant'}, me.tenant), ' · ', h('strong', {}, me.role));
  const header = h('header', {class: 'top'},
    h('a', {class: 'brand', href: '#/'}, logo(), h('span', {}, 'Better Compute')),
    nav,
    h('div', {class: 'top-right'}, status, who,
      h('button', {type: 'button', class: 'btn btn-small', id: 'signout', onclick: () => signOut()}, 'Sign out')));
  const main = h('main', {id: 'page', tabindex: '-1'});
  replace(app, h('a', {class: 'skip', href: '#page', onclick: (e) => { e.preventDefault(); main.focus(); }},
    'Skip to content'), header, refusalEl, main);
  route();
}


// decodeParam is a route parameter as written: percent-decoded, or as it
// stands when it is not valid percent-encoding (a mangled link), so that
// the page says the id was not found instead of staying blank.
function decodeParam(s) {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

async function route() {
  if (!current) return;
  pageCleanups.forEach((fn) => fn());
  pageCleanups = [];
  const {me, live} = current;
  const [path, qs] = (location.hash.slice(1) || '/').split('?');
  const found = routes.map((r) => ({r, m: r.re.exec(path)})).find((x) => x.m);
  if (!found) {
    location.replace(me.role === 'operator' ? '#/fleet' : '#/reservations');
    return;
  }
  const main = document.getElementById('page');
  document.querySelectorAll('nav a').forEach((a) => {
    if (a.dataset.nav === found.r.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  });
  // A fresh container per visit: a slow load of the page left behind
  // writes into a detached element, never over the page shown now.
  const el = h('div', {class: 'page'});
  replace(main, el);
  let alive = true;
  pageCleanups.push(() => { alive = false; });
  const ctx = {
    el, me, live,
    params: found.m.slice(1).map(decodeParam),
    query: new URLSearchParams(qs || ''),
    alive: () => alive,
    cleanup: (fn) => pageCleanups.push(fn),
  };
  if (found.r.operator && me.role !== 'operator') {
    replace(el, h('h1', {}, 'Operators only'),
      notice('info', 'The fleet is shown to operator tokens; this token belongs to tenant ', me.tenant, '.'));
    return;
  }
  try {
    await found.r.page.render(ctx);
  } catch (err) {
    if (alive) el.append(notice('error', err.message));
  }
  const h1 = el.querySelector('h1');
  if (alive && h1) document.title = `${h1.textContent} · Better Compute`;
}

window.addEventListener('hashchange', async () => {
  await route();
  // Keyboard and screen-reader users land on the new page, not on the link
  // they left.
  document.getElementById('page')?.focus({preventScroll: true});
});
setUnauthenticatedHandler((msg) => signOut(msg || 'Signed out: the token is no longer valid.'));
// Any request refused because the tenant is suspended stops the stream and
// says so, as the stream's own refusal does.
setSuspendedHandler((msg) => current?.live.stream.refuse({code: 'TENANT_SUSPENDED', message: msg}));

(async function boot() {
  const token = session.token();
  if (!token) return showSignIn();
  try {
    start(await get('/whoami', {}, {token}), token);
  } catch (err) {
    // A suspended tenant's token is kept: a reload after the resume signs
    // in with it again.
    if (err.code === 'TENANT_SUSPENDED') showSignIn(suspendedText(err.message));
    else if (err.status !== 401) showSignIn(err.message);
  }
})();
