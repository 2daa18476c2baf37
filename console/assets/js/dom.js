// DOM building and formatting. Every page builds its elements with h() and
// sets text through text nodes, never parsed as markup: tenant-supplied strings
// (webhook descriptions, ids) can never become markup, and the strict
// Content-Security-Policy needs no inline script or style.

const SVG_NS = 'http://www.w3.org/2000/svg';

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value' || k === 'checked' || k === 'selected') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** h('a', {href: '#/x', class: 'btn', onclick: fn}, 'text', child, …) */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** svg('rect', {x: 1, …}) builds an SVG element. */
export function svg(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** Replaces el's children. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A table with a header row; rows are arrays of cells (nodes or text). */
export function table(headers, rows, attrs = {}) {
  return h('div', {class: 'table-wrap'},
    h('table', attrs,
      h('thead', {}, h('tr', {}, headers.map((t) => h('th', {scope: 'col'}, t)))),
      h('tbody', {}, rows)));
}

/** A row: cells given as nodes or text; attrs go on the <tr>. */
export function row(attrs, ...cells) {
  return h('tr', attrs, cells.map((c) => h('td', {}, c)));
}

/** A coloured label for a state or liveness. */
export function badge(text, kind = text) {
  return h('span', {class: `badge badge-${String(kind).replace(/[^a-z0-9-]/gi, '-')}`}, text);
}

/** A message box: kind is info, error or ok. */
export function notice(kind, ...children) {
  return h('p', {class: `notice notice-${kind}`, role: kind === 'error' ? 'alert' : 'status'}, children);
}

const pad = (n) => String(n).padStart(2, '0');

/** Local date and time, minute precision: 2026-12-03 09:04. */
export function fmtTime(t) {
  if (!t) return '—';
  const d = t instanceof Date ? t : new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** Local time with seconds, for the event tail. */
export function fmtClock(t) {
  const d = new Date(t);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** The value of an <input type="datetime-local"> for a Date. */
export function toLocalInput(d) {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** Seconds as "42 s", "5 min", "3 h". */
export function fmtAge(seconds) {
  if (seconds === null || seconds === undefined) return 'never';
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

/** 1048576 → "1,048,576". */
export function fmtNumber(n) {
  return Number(n || 0).toLocaleString('en-US');
}

/** rsv_6b398ba2-8ef4-… → 6b398ba2: enough to tell reservations apart. */
export function shortId(id) {
  const s = String(id).replace(/^[a-z]+_/, '');
  return s.length > 8 ? s.slice(0, 8) : s;
}

/** A link to a reservation's page. */
export function reservationLink(id) {
  return h('a', {href: `#/reservations/${encodeURIComponent(id)}`, class: 'mono', title: id}, shortId(id));
}

/** A link to a node's page. */
export function nodeLink(id) {
  return h('a', {href: `#/nodes/${encodeURIComponent(id)}`}, id);
}
