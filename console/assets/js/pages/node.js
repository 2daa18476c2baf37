// A node: liveness and heartbeat, why it takes no bookings, conditions,
// generations, resources, and its GPUs with their mode, atoms and who holds
// each at a chosen time (now by default).

import {get} from '../api.js';
import {h, replace, table, row, badge, notice, fmtTime, fmtAge, toLocalInput} from '../dom.js';
import {meter} from '../charts.js';
import {blockers, deviceLabel} from '../fleet.js';
import {holdersAt, holdersCell} from '../holders.js';
import {ofTypes} from '../live.js';

export async function render(ctx) {
  const id = ctx.params[0];
  const body = h('div', {});
  const at = h('input', {type: 'datetime-local', id: 'holders-at', value: toLocalInput(new Date())});
  let when = null; // null: now, at each redraw
  const draw = async (minPosition) => {
    const n = await get(`/nodes/${encodeURIComponent(id)}`, {minPosition});
    const gpus = (n.devices || []).filter((d) => !d.parentId);
    const holders = await holdersAt(gpus.map((g) => g.id), when || new Date());
    if (ctx.alive()) replace(body, ...view(n, gpus, holders, when, form));
  };
  const form = h('form', {class: 'inline-form', id: 'holders-form'},
    h('label', {for: 'holders-at'}, 'Holders at'), at,
    h('button', {type: 'submit', class: 'btn btn-small'}, 'Show'),
    h('button', {type: 'button', class: 'btn btn-small', onclick: () => { when = null; at.value = toLocalInput(new Date()); draw(); }}, 'Now'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    when = at.value ? new Date(at.value) : null;
    draw().catch((err) => body.prepend(notice('error', err.message)));
  });
  replace(ctx.el, h('p', {class: 'crumbs'}, h('a', {href: '#/fleet'}, 'Fleet'), ' / node'),
    h('h1', {}, 'Node ', h('span', {class: 'mono'}, id)), body);
  ctx.cleanup(ctx.live.whenChanged((e) => ofTypes('reservation.', 'gpu.', 'device.')(e) || e.subject === `nodes/${id}`,
    (p) => draw(p).catch((err) => body.prepend(notice('error', err.message)))));
  await draw();
}

function view(n, gpus, holders, when, form) {
  const why = blockers(n);
  const conditions = n.conditions || [];
  const q = encodeURIComponent(n.id);
  return [
    h('dl', {class: 'facts'},
      fact('Pool', h('a', {href: `#/timeline?pool=${encodeURIComponent(n.poolId)}`}, n.poolId)),
      fact('Liveness', badge(n.liveness)),
      fact('Last heartbeat', n.lastHeartbeatAt ? `${fmtTime(n.lastHeartbeatAt)} (${fmtAge(n.secondsSinceHeartbeat)} ago)` : 'never'),
      fact('Not schedulable because', why.length ? why.map((r) => badge(r, 'warn')) : 'schedulable'),
      fact('Generation', `${n.observedGeneration} observed / ${n.generation} desired`),
      fact('Live reservations', String(n.liveReservations)),
      fact('vCPU', meter(n.vcpu.allocated, n.vcpu.capacity), pending(n.vcpu)),
      fact('Memory', meter(n.memoryMb.allocated, n.memoryMb.capacity, 'MB'), pending(n.memoryMb, 'MB')),
      fact('Disk', meter(n.diskGb.allocated, n.diskGb.capacity, 'GB'), pending(n.diskGb, 'GB')),
      fact('Registered', fmtTime(n.registeredAt))),
    h('p', {class: 'actions'}, h('a', {class: 'btn btn-small', href: `#/timeline?node=${q}`}, 'Bookings timeline of this node')),
    h('h2', {}, 'Conditions'),
    conditions.length
      ? table(['Type', 'Status', 'Reason', 'Message', 'Since'], conditions.map((c) =>
        row({}, badge(c.type, c.status ? 'warn' : 'ok'), String(c.status), c.reason || '—', c.message || '—', fmtTime(c.since))))
      : h('p', {class: 'muted'}, 'None.'),
    h('h2', {}, 'GPUs'),
    form,
    h('p', {class: 'muted'}, `Holders ${when ? 'at ' + fmtTime(when) : 'now'}.`),
    table(['GPU', 'Model', 'Mode', 'Health', 'Atoms', 'Held by'], gpus.map((g) => {
      const atoms = (n.devices || []).filter((d) => d.parentId === g.id);
      return row({dataset: {device: g.id}},
        h('span', {class: 'mono', title: g.id}, deviceLabel(g.id, n.id)),
        g.model,
        badge(g.mode || 'exclusive', 'mode'),
        h('span', {}, badge(g.health, g.health === 'healthy' ? 'ok' : 'warn'), g.quarantined ? badge('quarantined', 'warn') : null),
        atoms.length ? h('span', {class: 'atoms'}, atoms.map((a) =>
          h('span', {class: 'atom', title: a.id}, a.id.slice(a.id.indexOf('/') + 1), a.profile ? ` ${a.profile}` : ''))) : 'whole GPU',
        holdersCell(holders.get(g.id), g.id));
    }), {id: 'gpus'}),
  ];
}

// pending is the shrink of a scalar that the node's daemon reported and
// that waits for the node's bookings to fit it (null when none): new
// bookings are held to it already, so an operator sees it beside the meter
// of the recorded value.
function pending(s, unit = '') {
  if (s.pendingAllocatable == null) return null;
  return badge(`shrink to ${s.pendingAllocatable}${unit ? ' ' + unit : ''} pending (allocatable ${s.allocatable})`, 'warn');
}

function fact(term, ...desc) {
  return h('div', {}, h('dt', {}, term), h('dd', {}, desc));
}
