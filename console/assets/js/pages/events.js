// Events: the live tail of the stream, newest first, with filters by event
// family. The filters only hide rows: the one stream keeps everything, so
// widening a filter shows what arrived meanwhile, and a reconnect (which
// resumes from Last-Event-ID) leaves no gap in either case.

import {listAll} from '../api.js';
import {h, replace, fmtClock, fmtTime, notice, reservationLink} from '../dom.js';

/** Families of core.EventCatalog; families first seen on the stream are added. */
const FAMILIES = ['reservation', 'node', 'gpu', 'device', 'quota', 'site', 'pool', 'instance',
  'node_command', 'node_assignment', 'webhook_endpoint', 'priority_class', 'tenant'];
const SHOWN = 300;
const family = (type) => type.slice(0, type.lastIndexOf('.'));

export async function render(ctx) {
  const {live} = ctx;
  const off = new Set(JSON.parse(sessionStorage.getItem('compute.console.eventFilter') || '[]'));
  const save = () => sessionStorage.setItem('compute.console.eventFilter', JSON.stringify([...off]));
  let paused = false;
  const tbody = h('tbody', {});
  const counts = h('p', {class: 'muted', id: 'event-counts'});
  const families = new Set(FAMILIES);
  live.events.forEach(({envelope}) => families.add(family(envelope.type)));
  const boxes = h('fieldset', {class: 'filters', id: 'event-filters'}, h('legend', {}, 'Show'));
  const addBox = (f) => boxes.append(h('label', {class: 'check'},
    h('input', {type: 'checkbox', value: f, checked: !off.has(f), onchange: (e) => {
      e.target.checked ? off.delete(f) : off.add(f);
      save();
      redraw();
    }}), f));
  families.forEach(addBox);

  const visible = (e) => !off.has(family(e.type));
  const rowOf = ({envelope: e, id}) => {
    const rsv = e.subject.startsWith('reservations/') ? e.subject.slice(13) : '';
    return h('tr', {dataset: {eventId: e.id, type: e.type, subject: e.subject, position: id}, hidden: !visible(e)},
      h('td', {}, h('time', {datetime: e.time, title: fmtTime(e.time)}, fmtClock(e.time))),
      h('td', {}, h('span', {class: `type type-${family(e.type)}`}, e.type)),
      h('td', {class: 'mono'}, rsv ? ['reservations/', reservationLink(rsv)] : e.subject),
      h('td', {}, e.tenantId || h('span', {class: 'muted'}, 'fleet')),
      h('td', {class: 'small'}, summary(e)));
  };
  const redraw = () => {
    const rows = live.events.slice(-SHOWN).reverse().map(rowOf);
    replace(tbody, ...rows);
    const n = rows.filter((r) => !r.hidden).length;
    counts.textContent = `${n} shown of the ${live.events.length} events received since sign-in.`;
  };

  const pause = h('button', {type: 'button', class: 'btn btn-small', 'aria-pressed': 'false', id: 'pause', onclick: () => {
    paused = !paused;
    pause.setAttribute('aria-pressed', String(paused));
    pause.textContent = paused ? 'Resume' : 'Pause';
    if (!paused) redraw();
  }}, 'Pause');
  const historyNote = h('span', {class: 'muted'});
  const loadHistory = h('button', {type: 'button', class: 'btn btn-small', onclick: async () => {
    loadHistory.disabled = true;
    try {
      const past = await listAll('/events', {}, 4);
      const added = live.addHistory(past);
      historyNote.textContent = ` ${added} earlier events added${past.truncated ? ' (the first 2,000 of the log)' : ''}.`;
      redraw();
    } catch (err) {
      historyNote.replaceChildren(notice('error', err.message));
    } finally {
      loadHistory.disabled = false;
    }
  }}, 'Load from the log');

  replace(ctx.el, h('h1', {}, 'Events'),
    h('p', {class: 'muted'}, 'Live from GET /v1/events/stream; on a reconnect the stream resumes after the last event received.'),
    boxes, h('div', {class: 'toolbar'}, pause, loadHistory, historyNote), counts,
    h('div', {class: 'table-wrap'}, h('table', {id: 'event-tail'},
      h('thead', {}, h('tr', {}, ['Time', 'Type', 'Subject', 'Tenant', 'What'].map((t) => h('th', {scope: 'col'}, t)))), tbody)));
  redraw();
  // One redraw per animation frame, however fast events arrive.
  let frame = 0;
  ctx.cleanup(() => cancelAnimationFrame(frame));
  ctx.cleanup(live.subscribe((e) => {
    if (!families.has(family(e.type))) { families.add(family(e.type)); addBox(family(e.type)); }
    if (!paused && !frame) frame = requestAnimationFrame(() => { frame = 0; redraw(); });
  }));
}

/** A line about what the event says, from its data. */
function summary(e) {
  const d = e.data || {};
  const parts = [];
  if (d.state) parts.push(`state ${d.state}`);
  if (d.nodeId && !e.subject.startsWith('nodes/')) parts.push(`node ${d.nodeId}`);
  if (Array.isArray(d.deviceIds) && d.deviceIds.length) parts.push(d.deviceIds.length === 1 ? '1 device' : `${d.deviceIds.length} devices`);
  if (d.start && d.end) parts.push(`${fmtTime(d.start)} → ${fmtTime(d.end)}`);
  if (d.resource) parts.push(`${d.resource} max ${d.max}`);
  if (d.model) parts.push(d.model);
  if (d.version) parts.push(`v${d.version}`);
  return parts.join(' · ');
}
