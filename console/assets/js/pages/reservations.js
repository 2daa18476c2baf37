// Reservations: the list (a tenant sees its own, an operator every
// tenant's), a form to make one, and rows that change as events arrive.

import {call, listAll, optional, itemsOf, idempotencyKey} from '../api.js';
import {h, replace, table, row, badge, notice, fmtTime, toLocalInput, reservationLink, nodeLink} from '../dom.js';
import {ofTypes} from '../live.js';

const STATES = ['live', 'all', 'pending', 'booked', 'active', 'released', 'expired', 'cancelled', 'failed', 'preempted'];
const HOUR = 3600e3;
const DURATIONS = [['1 hour', HOUR], ['4 hours', 4 * HOUR], ['1 day', 24 * HOUR], ['3 days', 72 * HOUR], ['1 week', 168 * HOUR]];

export async function render(ctx) {
  const {me, query} = ctx;
  const op = me.role === 'operator';
  const state = STATES.includes(query.get('state')) ? query.get('state') : 'all';
  const tenant = op ? (query.get('tenant') || '') : '';
  const list = h('div', {id: 'reservations'});
  const filters = h('form', {class: 'toolbar', id: 'reservation-filters'},
    h('label', {class: 'inline'}, 'State ', h('select', {name: 'state'},
      STATES.map((s) => h('option', {value: s, selected: s === state}, s)))),
    op ? h('label', {class: 'inline'}, 'Tenant ', h('input', {name: 'tenant', value: tenant, size: 12})) : null,
    h('button', {type: 'submit', class: 'btn btn-small'}, 'Filter'));
  filters.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const f = new FormData(filters);
    const next = new URLSearchParams();
    if (f.get('state') !== 'all') next.set('state', f.get('state'));
    if (f.get('tenant')) next.set('tenant', f.get('tenant'));
    location.hash = `#/reservations?${next}`;
  });

  let changed = new Set();
  const draw = async (minPosition) => {
    const states = state === 'live' ? ['pending', 'booked', 'active'] : [state === 'all' ? '' : state];
    const items = (await Promise.all(states.map((s) => listAll('/reservations', {state: s, tenant, minPosition}, 5)))).flat();
    items.sort((a, b) => String(b.createdAt).localeCompare(String(a.createdAt)));
    if (ctx.alive()) replace(list, listView(items, op, changed));
    changed = new Set();
  };
  const writer = me.role !== 'viewer';
  replace(ctx.el, h('h1', {}, 'Reservations'),
    writer ? await newReservationForm(ctx, (position) => draw(position)) : null,
    filters, list);
  ctx.cleanup(ctx.live.subscribe((e) => { if (e.type.startsWith('reservation.')) changed.add(e.subject.replace(/^reservations\//, '')); }));
  ctx.cleanup(ctx.live.whenChanged(ofTypes('reservation.'), (p) => draw(p).catch((err) => list.prepend(notice('error', err.message)))));
  await draw();
}

function listView(items, op, changed) {
  if (!items.length) return h('p', {class: 'muted'}, 'No reservations.');
  const headers = ['Reservation', 'Tenant', 'State', 'Class', 'Request', 'Pool', 'Node', 'Devices', 'Start', 'End'];
  const keep = (cells) => cells.filter((_, i) => op || i !== 1);
  return table(keep(headers), items.map((r) => row(
    {dataset: {reservation: r.id, state: r.state}, class: changed.has(r.id) ? 'flash' : null},
    ...keep([reservationLink(r.id), r.tenant, badge(r.state), priorityText(r), requestText(r.spec), r.poolId || r.siteId || '—',
      r.nodeId ? (op ? nodeLink(r.nodeId) : r.nodeId) : '—', devicesText(r.deviceIds), fmtTime(r.start), fmtTime(r.end)]))),
  {id: 'reservation-table'});
}

/** The priority class, its value and whether it may be preempted. */
export function priorityText(r) {
  const cls = r.priorityClass || 'standard';
  return h('span', {class: 'priority', dataset: {priorityClass: cls},
    title: `priority ${r.priority || 0}${r.preemptible ? ', preemptible' : ''}`}, cls, r.preemptible ? ' ↓' : '');
}

/** What a reservation asked for: "2 × GPU H100-80GB, 16 vCPU, 65536 MB, 100 GB disk". */
export function requestText(spec) {
  const g = (spec && spec.gpu) || {};
  const parts = [];
  if (g.count) {
    const what = g.kind === 'mig' ? `MIG ${g.migProfile}` : g.kind === 'slot' ? `${g.slotKind} slot` : 'GPU';
    parts.push(`${g.count} × ${what}${g.model ? ` ${g.model}` : ''}`);
  }
  if (spec && spec.vcpu) parts.push(`${spec.vcpu} vCPU`);
  if (spec && spec.memoryMb) parts.push(`${spec.memoryMb} MB`);
  if (spec && spec.diskGb) parts.push(`${spec.diskGb} GB disk`);
  return h('span', {class: 'request small'}, parts.join(', ') || '—');
}

/** "GPU-…-3, GPU-…-4", shortened when long. */
export function devicesText(ids) {
  if (!ids || !ids.length) return '—';
  return h('span', {class: 'mono small', title: ids.join('\n')}, ids.length > 2 ? `${ids[0]} +${ids.length - 1}` : ids.join(', '));
}

/** The form that makes a reservation, with an Idempotency-Key per click. */
async function newReservationForm(ctx, afterCreate) {
  const pools = await knownPools(ctx.me);
  // Now, to the minute: a start in the past is taken as now by the API.
  const start = new Date(Math.floor(Date.now() / 60e3) * 60e3);
  const num = (name, label, value, min = 0) => field(label, h('input', {type: 'number', name, id: `nr-${name}`, value, min, required: true}));
  const form = h('form', {id: 'new-reservation-form', class: 'grid-form'},
    field('Pool', h('input', {name: 'poolId', id: 'nr-poolId', list: 'known-pools', value: pools[0] || '', autocomplete: 'off'})),
    field('or site', h('input', {name: 'siteId', id: 'nr-siteId', autocomplete: 'off'})),
    h('datalist', {id: 'known-pools'}, pools.map((p) => h('option', {value: p}))),
    num('gpus', 'GPUs', 1),
    field('GPU model', h('input', {name: 'gpuModel', id: 'nr-gpuModel', placeholder: 'any, e.g. H100-80GB'})),
    field('MIG profile', h('input', {name: 'migProfile', id: 'nr-migProfile', placeholder: 'e.g. 1g.10gb'})),
    field('Slot kind', h('select', {name: 'slotKind', id: 'nr-slotKind'},
      h('option', {value: ''}, 'whole GPU or MIG'), h('option', {value: 'time-slice'}, 'time-slice'), h('option', {value: 'mps'}, 'mps'))),
    num('vcpu', 'vCPU', 8), num('memoryMb', 'Memory (MB)', 32768), num('diskGb', 'Disk (GB)', 100),
    field('Priority class', h('input', {name: 'priorityClass', id: 'nr-priorityClass', placeholder: 'the default class', autocomplete: 'off'})),
    field('Start', h('input', {type: 'datetime-local', name: 'start', id: 'nr-start', value: toLocalInput(start), required: true})),
    field('Duration', h('select', {name: 'duration', id: 'nr-duration'},
      DURATIONS.map(([label, ms]) => h('option', {value: ms, selected: ms === 24 * HOUR}, label)))),
    h('div', {class: 'form-actions'}, h('button', {type: 'submit', class: 'btn btn-primary', id: 'nr-submit'}, 'Reserve')));
  const result = h('div', {id: 'new-reservation-result', 'aria-live': 'polite'});
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    const begin = new Date(f.get('start'));
    const body = {gpus: Number(f.get('gpus')), vcpu: Number(f.get('vcpu')), memoryMb: Number(f.get('memoryMb')),
      diskGb: Number(f.get('diskGb')), start: begin.toISOString(),
      end: new Date(begin.getTime() + Number(f.get('duration'))).toISOString()};
    for (const k of ['poolId', 'siteId', 'gpuModel', 'migProfile', 'slotKind', 'priorityClass']) if (f.get(k)) body[k] = f.get(k);
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      const r = await call('POST', '/reservations', {body, headers: {'Idempotency-Key': idempotencyKey()}});
      const why = (r.conditions || []).find((c) => c.type === 'Unschedulable');
      replace(result, notice(r.state === 'pending' ? 'info' : 'ok',
        'Reservation ', reservationLink(r.id), ` is ${r.state}`,
        r.nodeId ? ` on ${r.nodeId} (${r.deviceIds.join(', ')})` : '', why ? `: ${why.message}` : '.'));
      result.dataset.created = r.id;
      await afterCreate(r.position);
    } catch (err) {
      replace(result, notice('error', err.message));
    } finally {
      button.disabled = false;
    }
  });
  return h('details', {class: 'card', id: 'new-reservation'},
    h('summary', {}, 'New reservation'), form, result);
}

function field(label, input) {
  return h('div', {class: 'field'}, h('label', {for: input.id}, label), input);
}

/** Pools to suggest: GET /v1/pools when the server has it, else what the token can see. */
async function knownPools(me) {
  const pools = itemsOf(await optional('/pools').catch(() => null)).map((p) => p.id);
  if (!pools.length) {
    const seen = me.role === 'operator' ? await listAll('/nodes', {}, 2).catch(() => []) : await listAll('/reservations', {}, 1).catch(() => []);
    pools.push(...seen.map((x) => x.poolId).filter(Boolean));
  }
  return [...new Set(pools)].sort();
}
