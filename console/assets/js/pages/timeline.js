// Bookings timeline: a time axis (hours to weeks), one lane per GPU atom
// and a bar per booking, for a pool or a node; pending reservations below
// with why they wait. Operators read it from the nodes' bookings; a tenant,
// who may not read nodes, from its own reservations. Redrawn live, with
// ?minPosition= so the read models already hold the event that prompted it.

import {get, listAll} from '../api.js';
import {h, replace, table, row, notice, fmtTime, toLocalInput, reservationLink} from '../dom.js';
import {timelineChart} from '../charts.js';
import {atomsOf, deviceLabel} from '../fleet.js';
import {holdersAt, holdersCell} from '../holders.js';
import {ofTypes} from '../live.js';

const HOUR = 3600e3;
const RANGES = [['6h', 6 * HOUR], ['1d', 24 * HOUR], ['3d', 72 * HOUR], ['1w', 168 * HOUR], ['2w', 336 * HOUR]];
const LIVE = ['pending', 'booked', 'active'];

export async function render(ctx) {
  const q = ctx.query, op = ctx.me.role === 'operator';
  const rangeKey = RANGES.some(([k]) => k === q.get('range')) ? q.get('range') : '1d';
  const span = RANGES.find(([k]) => k === rangeKey)[1];
  const from = Number(q.get('from')) || Date.now() - span / 10;
  const scope = op ? (q.get('node') ? {node: q.get('node')} : {pool: q.get('pool') || ''}) : {};
  const go = (changes) => {
    const next = new URLSearchParams(q);
    for (const [k, v] of Object.entries(changes)) v === null ? next.delete(k) : next.set(k, v);
    location.hash = `#/timeline?${next}`;
  };

  const chart = h('div', {class: 'chart-wrap', id: 'timeline'});
  const pending = h('div', {id: 'pending'});
  const lookup = h('div', {});
  const title = scope.node ? `node ${scope.node}` : scope.pool ? `pool ${scope.pool}` : op ? 'all pools' : 'your reservations';
  replace(ctx.el, h('h1', {}, 'Bookings timeline'),
    h('div', {class: 'toolbar'},
      op ? await scopePicker(scope, go) : null,
      h('div', {class: 'btn-group', role: 'group', 'aria-label': 'Time range'}, RANGES.map(([k]) =>
        h('button', {type: 'button', class: 'btn btn-small', 'aria-pressed': String(k === rangeKey),
          onclick: () => go({range: k})}, k))),
      h('div', {class: 'btn-group', role: 'group', 'aria-label': 'Move in time'},
        h('button', {type: 'button', class: 'btn btn-small', onclick: () => go({from: from - span / 2})}, '← Earlier'),
        h('button', {type: 'button', class: 'btn btn-small', onclick: () => go({from: null})}, 'Now'),
        h('button', {type: 'button', class: 'btn btn-small', onclick: () => go({from: from + span / 2})}, 'Later →'))),
    h('p', {class: 'muted', id: 'timeline-caption'}, `${title} · ${fmtTime(from)} → ${fmtTime(from + span)}`),
    chart, h('h2', {}, 'Pending'), pending, op ? lookup : null);

  let data = null;
  const drawChart = () => {
    if (!data || !ctx.alive()) return;
    if (!data.lanes.length) return replace(chart, notice('info', op ? 'No GPUs here.' : 'You hold no devices now.'));
    replace(chart, timelineChart({lanes: data.lanes, from, to: from + span, now: Date.now(), width: chart.clientWidth - 2}),
      legend());
  };
  const draw = async (minPosition) => {
    data = op ? await operatorData(scope, minPosition) : await tenantData(minPosition);
    if (!ctx.alive()) return;
    drawChart();
    replace(pending, pendingView(data.pending));
    if (op && !lookup.firstChild) replace(lookup, holdersLookup(data.lanes));
  };
  let resizeTimer = 0;
  const onResize = () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(drawChart, 100); };
  window.addEventListener('resize', onResize);
  ctx.cleanup(() => window.removeEventListener('resize', onResize));
  ctx.cleanup(ctx.live.whenChanged(ofTypes('reservation.', 'gpu.', 'node.'),
    (p) => draw(p).catch((err) => chart.prepend(notice('error', err.message)))));
  await draw();
}

/** A select of every pool and node, for operators. */
async function scopePicker(scope, go) {
  const nodes = await listAll('/nodes');
  const pools = [...new Set(nodes.map((n) => n.poolId))].sort();
  const value = scope.node ? `node:${scope.node}` : `pool:${scope.pool}`;
  const sel = h('select', {id: 'timeline-scope', onchange: (e) => {
    const [kind, id] = e.target.value.split(/:(.*)/s);
    go(kind === 'node' ? {node: id, pool: null} : {pool: id, node: null});
  }},
  h('option', {value: 'pool:', selected: value === 'pool:'}, 'All pools'),
  h('optgroup', {label: 'Pools'}, pools.map((p) => h('option', {value: `pool:${p}`, selected: value === `pool:${p}`}, p))),
  h('optgroup', {label: 'Nodes'}, nodes.map((n) => h('option', {value: `node:${n.id}`, selected: value === `node:${n.id}`}, n.id))));
  return h('label', {class: 'inline'}, 'Show ', sel);
}

/** Lanes from the nodes' devices and bookings; states from the reservations. */
async function operatorData(scope, minPosition) {
  const ids = scope.node ? [scope.node] : (await listAll('/nodes', {pool: scope.pool, minPosition})).map((n) => n.id);
  const [nodes, ...lists] = await Promise.all([
    Promise.all(ids.map((id) => get(`/nodes/${encodeURIComponent(id)}`, {minPosition}))),
    ...LIVE.map((state) => listAll('/reservations', {state, minPosition}, 5))]);
  const reservations = lists.flat();
  const stateOf = new Map(reservations.map((r) => [r.id, r.state]));
  const pools = new Set(nodes.map((n) => n.poolId));
  const lanes = nodes.sort((a, b) => a.id.localeCompare(b.id)).flatMap((n) => atomsOf(n.devices || []).map((d) => ({
    id: d.id, group: `${n.id} · ${d.model}`,
    label: `${deviceLabel(d.id, n.id)}${d.profile ? ' · ' + d.profile : ''}`,
    bookings: d.bookings.map((b) => ({...b, from: Date.parse(b.from), to: Date.parse(b.to), state: stateOf.get(b.reservationId)})),
  })));
  const waiting = reservations.filter((r) => r.state === 'pending' && (!scope.pool || pools.has(r.poolId) || !r.poolId));
  return {lanes, pending: waiting};
}

/** Lanes from the tenant's own live reservations: the devices it holds. */
async function tenantData(minPosition) {
  const mine = (await Promise.all(LIVE.map((state) => listAll('/reservations', {state, minPosition}, 5)))).flat();
  const lanes = new Map();
  for (const r of mine.filter((x) => x.state !== 'pending')) {
    for (const d of r.deviceIds) {
      if (!lanes.has(d)) lanes.set(d, {id: d, group: r.nodeId, label: deviceLabel(d, r.nodeId), bookings: []});
      lanes.get(d).bookings.push({reservationId: r.id, tenant: r.tenant, state: r.state,
        from: Date.parse(r.start), to: Date.parse(r.end)});
    }
  }
  const sorted = [...lanes.values()].sort((a, b) => (a.group + a.id).localeCompare(b.group + b.id));
  return {lanes: sorted, pending: mine.filter((r) => r.state === 'pending')};
}

function pendingView(list) {
  if (!list.length) return h('p', {class: 'muted'}, 'No reservation is waiting for capacity.');
  return table(['Reservation', 'Tenant', 'Window', 'Why pending'], list.map((r) => {
    const why = (r.conditions || []).find((c) => c.type === 'Unschedulable' && c.status);
    return row({dataset: {reservation: r.id}}, reservationLink(r.id), r.tenant,
      `${fmtTime(r.start)} → ${fmtTime(r.end)}`, why ? why.message : '—');
  }));
}

function legend() {
  return h('p', {class: 'legend'}, ['booked', 'active'].map((s) =>
    h('span', {class: 'legend-item'}, h('span', {class: `swatch swatch-${s}`}), s)));
}

/** "Who holds this atom at that time", for operators. */
function holdersLookup(lanes) {
  const sel = h('select', {id: 'lookup-device'}, lanes.map((l) => h('option', {value: l.id}, `${l.group} — ${l.label}`)));
  const at = h('input', {type: 'datetime-local', id: 'lookup-at', value: toLocalInput(new Date())});
  const out = h('div', {id: 'lookup-result'});
  const form = h('form', {class: 'inline-form'},
    h('label', {for: 'lookup-device'}, 'Device'), sel, h('label', {for: 'lookup-at'}, 'at'), at,
    h('button', {type: 'submit', class: 'btn btn-small'}, 'Who holds it?'), out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const holders = await holdersAt([sel.value], new Date(at.value));
      replace(out, holdersCell(holders.get(sel.value), sel.value));
    } catch (err) {
      replace(out, notice('error', err.message));
    }
  });
  return h('section', {}, h('h2', {}, 'Holder at a time'), form);
}
