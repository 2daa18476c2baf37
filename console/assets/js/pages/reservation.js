// One reservation: what it is, why it waits if it does, every state change
// as it arrives, and the extend, release and cancel buttons. Each button
// asks for confirmation and sends a fresh Idempotency-Key, so a retry of
// the click replays its answer instead of acting twice. (Release and cancel
// need no key today: the API refuses a repeat of either with a CONFLICT
// that changes nothing.) No If-Match: the reservation moves on its own
// (booked becomes active at its start), and a click on a page a moment old
// must still release it; extend names an absolute end, right at any version.

import {call, get, idempotencyKey} from '../api.js';
import {h, replace, table, row, badge, notice, fmtTime, fmtClock, toLocalInput, nodeLink} from '../dom.js';
import {devicesText, priorityText, requestText} from './reservations.js';
import {EventStream} from '../sse.js';

const TERMINAL = new Set(['released', 'expired', 'cancelled', 'failed', 'preempted']);

export async function render(ctx) {
  const id = ctx.params[0];
  const subject = `reservations/${id}`;
  const body = h('div', {});
  const status = h('div', {id: 'action-result', 'aria-live': 'polite'});
  const history = h('ol', {id: 'history', class: 'history'});
  const historyNote = h('p', {class: 'muted'});
  replace(ctx.el, h('p', {class: 'crumbs'}, h('a', {href: '#/reservations'}, 'Reservations'), ' / reservation'),
    h('h1', {}, 'Reservation ', h('span', {class: 'mono'}, id)), status, body,
    h('h2', {}, 'State changes'), historyNote, history);

  const seen = new Set();
  const addHistory = (e, live) => {
    if (seen.has(e.id)) return;
    seen.add(e.id);
    const d = e.data || {};
    history.append(h('li', {dataset: {type: e.type, version: d.version}, class: live ? 'flash' : null},
      h('time', {datetime: e.time}, `${fmtTime(e.time)}:${fmtClock(e.time).slice(-2)}`), ' ',
      badge(e.type.replace('reservation.', ''), d.state), d.state ? ` → ${d.state}` : '',
      d.version ? h('span', {class: 'muted'}, ` (version ${d.version})`) : null,
      d.nodeId ? h('span', {class: 'muted'}, ` on ${d.nodeId}`) : null));
  };

  let current = null;
  const draw = async (minPosition) => {
    try {
      current = await get(`/reservations/${encodeURIComponent(id)}`, {minPosition});
    } catch (err) {
      if (err.status !== 404) throw err;
      replace(body, notice('error', 'Reservation not found, or not visible to this token.'));
      body.dataset.notFound = 'true';
      return;
    }
    if (ctx.alive()) replace(body, ...view(ctx, current, act));
  };
  const act = async (label, method, path, reqBody) => {
    if (!confirm(`${label} reservation ${id}?`)) return;
    const headers = {'Idempotency-Key': idempotencyKey()};
    try {
      const r = await call(method, path, {body: reqBody, headers});
      replace(status, notice('ok', `${label}: the reservation is now ${r.state}.`));
      await draw(r.position);
    } catch (err) {
      replace(status, notice('error', `${label} failed: ${err.message}`));
    }
  };

  await draw();
  if (body.dataset.notFound || !ctx.alive()) return;
  // The reservation's own stream (?subject=, from the start of the log:
  // after=): its history, read by the server from an index by subject
  // however many other events lie before and between its own, then its
  // changes live, in one order with nothing missed between the two; a
  // reconnect resumes with Last-Event-ID. The server filters, so the page
  // receives nothing of the tenant's other reservations. It is a second
  // stream of the token while the page is open (the shared one feeds the
  // header and the Events page), closed when the page is left.
  const drawn = current ? current.version : 0;
  const stream = new EventStream({
    token: ctx.live.stream.token,
    path: `/v1/events/stream?subject=${encodeURIComponent(subject)}&after=`,
    onEvent: (e, position) => {
      if (!ctx.alive() || e.subject !== subject) return;
      // What the page drew already (its version or older) is history;
      // anything newer is a change to show, and to redraw for.
      const version = e.data && e.data.version;
      const newer = !version || version > drawn;
      addHistory(e, newer);
      if (newer) draw(position).catch((err) => replace(status, notice('error', err.message)));
    },
    onStatus: (st) => {
      if (!ctx.alive()) return;
      if (st.state === 'live') replace(historyNote, 'From the log, then live.');
      else if (st.state === 'reconnecting') replace(historyNote, 'Reconnecting to the event stream; it resumes where it stopped.');
      else if (st.refusal) replace(historyNote, `Live updates stopped: ${st.refusal.message}.`);
    },
  }).start();
  ctx.cleanup(() => stream.stop());
}

function view(ctx, r, act) {
  const op = ctx.me.role === 'operator', writer = ctx.me.role !== 'viewer';
  const why = (r.conditions || []).filter((c) => c.status);
  const path = `/reservations/${encodeURIComponent(r.id)}`;
  const endInput = h('input', {type: 'datetime-local', id: 'extend-end',
    value: toLocalInput(new Date(Date.parse(r.end) + 3600e3))});
  const open = !TERMINAL.has(r.state);
  return [
    h('dl', {class: 'facts'},
      fact('State', h('span', {id: 'reservation-state', dataset: {state: r.state}}, badge(r.state))),
      fact('Tenant', r.tenant),
      fact('Priority class', h('span', {id: 'reservation-priority'}, priorityText(r),
        h('span', {class: 'muted'}, ` (priority ${r.priority || 0}, ${r.preemptible ? 'preemptible' : 'not preemptible'})`))),
      fact('Request', h('span', {id: 'reservation-request'}, requestText(r.spec))),
      fact(r.poolId ? 'Pool' : 'Site', r.poolId || r.siteId || '—'),
      r.queue ? fact('Place in line', h('span', {id: 'reservation-queue'}, queueText(r.queue))) : null,
      fact('Node', r.nodeId ? (op ? nodeLink(r.nodeId) : r.nodeId) : '—'),
      fact('Devices', devicesText(r.deviceIds)),
      fact('Window', `${fmtTime(r.start)} → ${fmtTime(r.end)}`),
      fact('Version', String(r.version)),
      fact('Updated', fmtTime(r.updatedAt))),
    why.length ? h('section', {}, h('h2', {}, r.state === 'pending' ? 'Why it is pending' : 'Conditions'),
      table(['Condition', 'Reason', 'Message'], why.map((c) => row({}, badge(c.type, 'warn'), c.reason || '—', c.message || '—')))) : null,
    writer && open ? h('section', {class: 'card actions-card'},
      h('h2', {}, 'Change it'),
      h('div', {class: 'inline-form'},
        h('label', {for: 'extend-end'}, 'New end'), endInput,
        h('button', {type: 'button', class: 'btn', id: 'extend', onclick: () =>
          act('Extend', 'POST', `${path}/extend`, {end: new Date(endInput.value).toISOString()})}, 'Extend')),
      h('div', {class: 'inline-form'},
        r.state === 'pending'
          ? h('button', {type: 'button', class: 'btn btn-danger', id: 'cancel', onclick: () => act('Cancel', 'POST', `${path}/cancel`)}, 'Cancel')
          : h('button', {type: 'button', class: 'btn btn-danger', id: 'release', onclick: () => act('Release', 'POST', `${path}/release`)}, 'Release'))) : null,
  ];
}

// queueText is where a pending reservation stands in the waiting line of
// its pool or site (docs/concepts/fair-share.md), as the line last ranked it.
function queueText(q) {
  if (!q.position) return `not ranked yet in ${q.scope} (the line runs every 30 s)`;
  return `${q.position} of ${q.queued} in ${q.scope}, as of ${fmtTime(q.asOf)} ` +
    `(tenant usage ${q.tenantUsageGpuHours.toFixed(2)} GPU-h, share ${q.tenantShare})`;
}

function fact(term, ...desc) {
  return h('div', {}, h('dt', {}, term), h('dd', {}, desc));
}
