// Capacity and quotas as bars. Operators see each pool's scalars and GPU
// atoms (GET /v1/pools/{id}/capacity) and every tenant's quotas; a tenant
// sees its own. Quotas are read from GET
// /v1/tenants/{t}/quotas when the server has it: without it the page says
// so instead of guessing. An operator also sees which tenants are
// suspended, since when and why (GET /v1/tenants), and can suspend or
// resume one here (POST /v1/tenants/{t}/suspend, /resume).

import {call, get, listAll, optional, itemsOf} from '../api.js';
import {h, replace, table, row, notice, badge, fmtTime} from '../dom.js';
import {meter, atomBar} from '../charts.js';
import {ofTypes} from '../live.js';

export async function render(ctx) {
  const op = ctx.me.role === 'operator';
  const pools = h('div', {id: 'pool-capacity'});
  const quotas = h('div', {id: 'quotas'});
  const tenants = new Set([ctx.me.tenant]);
  const listedTenants = new Map(); // id -> the tenant as GET /v1/tenants lists it
  replace(ctx.el, h('h1', {}, op ? 'Capacity' : 'Quotas'), op ? pools : null,
    op ? h('h2', {}, 'Tenant quotas') : null, quotas);

  const drawPools = async (minPosition) => {
    const [nodes, listed] = await Promise.all([listAll('/nodes', {minPosition}), optional('/pools')]);
    const ids = [...new Set([...itemsOf(listed).map((p) => p.id), ...nodes.map((n) => n.poolId)])].sort();
    const caps = await Promise.all(ids.map((id) => get(`/pools/${encodeURIComponent(id)}/capacity`, {minPosition})));
    if (!ctx.alive()) return;
    replace(pools, ...(caps.length ? caps.map(poolView) : [notice('info', 'No pools with nodes yet.')]));
    const focus = ctx.query.get('pool');
    if (focus) document.getElementById(`pool-${focus}`)?.scrollIntoView();
  };
  const drawQuotas = async () => {
    if (op) {
      // Every tenant when the server lists them (GET /v1/tenants), else
      // those that made reservations.
      const listed = await optional('/tenants');
      const seen = listed ? itemsOf(listed) : (await listAll('/reservations', {}, 2).catch(() => [])).map((r) => ({id: r.tenant}));
      seen.forEach((x) => { tenants.add(x.id); listedTenants.set(x.id, x); });
    }
    const answers = await Promise.all([...tenants].sort().map(async (t) =>
      [t, await optional(`/tenants/${encodeURIComponent(t)}/quotas`)]));
    if (!ctx.alive()) return;
    if (answers.every(([, a]) => a === null)) {
      return replace(quotas, notice('info', 'This server does not serve GET /v1/tenants/{tenant}/quotas yet, so quotas cannot be shown. ',
        op ? 'They are set with PUT /v1/tenants/{tenant}/quotas/{resource}.' : ''));
    }
    const redraw = () => drawQuotas().catch((err) => quotas.prepend(notice('error', err.message)));
    replace(quotas, ...answers.map(([t, a]) => quotaView(t, a, listedTenants.get(t), op && t !== ctx.me.tenant ? redraw : null)));
  };
  ctx.cleanup(ctx.live.whenChanged(ofTypes('reservation.', 'quota.', 'node.', 'gpu.', 'device.', 'tenant.'), (p) => Promise.all([
    op ? drawPools(p).catch((err) => pools.prepend(notice('error', err.message))) : null,
    drawQuotas().catch((err) => quotas.prepend(notice('error', err.message)))])));
  await Promise.all([op ? drawPools() : null, drawQuotas()]);
}

function poolView(c) {
  return h('section', {class: 'card', id: `pool-${c.poolId}`, dataset: {pool: c.poolId}},
    h('h3', {}, 'Pool ', h('span', {class: 'mono'}, c.poolId), h('span', {class: 'muted'},
      ` · site ${c.siteId} · ${c.kind} · ${c.nodes} nodes${c.cordonedNodes ? `, ${c.cordonedNodes} cordoned` : ''}`)),
    table(['Resource', 'Allocated / capacity'], [
      row({}, 'vCPU', meter(c.vcpu.allocated, c.vcpu.capacity)),
      row({}, 'Memory', meter(c.memoryMb.allocated, c.memoryMb.capacity, 'MB')),
      row({}, 'Disk', meter(c.diskGb.allocated, c.diskGb.capacity, 'GB')),
    ]),
    table(['GPU atoms', 'Allocated · free · not schedulable'], (c.gpus || []).map((g) =>
      row({dataset: {atoms: `${g.kind}:${g.model}:${g.profile || ''}`}},
        `${g.model} ${g.kind}${g.profile ? ' ' + g.profile : ''}`, atomBar(g)))));
}

/**
 * One tenant's quotas, whatever shape the answer has: a list or a map,
 * with its suspension when info (the tenant as listed) says it is
 * suspended. With redraw (an operator, another tenant than its own) it
 * has the suspend or resume control, and redraws the cards after it.
 */
function quotaView(tenant, answer, info, redraw) {
  if (answer === null && !info?.suspended) return null;
  let items = answer === null ? [] : itemsOf(answer.quotas || answer);
  if (!items.length && answer && typeof answer === 'object' && !Array.isArray(answer)) {
    items = Object.entries(answer).filter(([, v]) => v && typeof v === 'object' && 'max' in v)
      .map(([resource, v]) => ({resource, ...v}));
  }
  return h('section', {class: 'card', dataset: {tenant}},
    h('h3', {}, 'Tenant ', h('span', {class: 'mono'}, tenant), info?.suspended ? [' ', badge('suspended')] : null),
    info?.suspended ? notice('error', 'Suspended since ', fmtTime(info.suspendedAt), ': ',
      h('span', {class: 'suspended-reason'}, info.suspendedReason || '')) : null,
    redraw ? suspensionControl(tenant, info, redraw) : null,
    items.length ? table(['Resource', 'Used / limit'], items.sort((a, b) => a.resource.localeCompare(b.resource))
      .map((q) => row({dataset: {resource: q.resource}}, q.resource, meter(q.used || 0, q.max || 0))))
      : h('p', {class: 'muted'}, 'No quotas set.'));
}

/** The operator's suspend (with its reason) or resume of one tenant. */
function suspensionControl(tenant, info, redraw) {
  const path = `/tenants/${encodeURIComponent(tenant)}`;
  const out = h('div', {class: 'suspension-result'});
  const run = (what, fn) => fn().then(redraw).catch((err) => replace(out, notice('error', `${what}: ${err.message}`)));
  if (info?.suspended) {
    return h('div', {class: 'toolbar'},
      h('button', {type: 'button', class: 'btn btn-small', onclick: () => confirm(`Resume tenant ${tenant}?`) &&
        run('Resume', () => call('POST', `${path}/resume`))}, 'Resume'), out);
  }
  const reason = h('input', {type: 'text', id: `suspend-reason-${tenant}`, maxlength: 500, placeholder: 'invoice unpaid, abuse report …'});
  return h('div', {class: 'toolbar'},
    h('span', {class: 'inline-form'}, h('label', {for: reason.id}, 'Reason'), reason,
      h('button', {type: 'button', class: 'btn btn-small', onclick: () => {
        if (!reason.value.trim()) return replace(out, notice('error', 'Say why the tenant is suspended.'));
        return confirm(`Suspend tenant ${tenant}? Every request with its tokens will be refused.`) &&
          run('Suspend', () => call('POST', `${path}/suspend`, {body: {reason: reason.value.trim()}}));
      }}, 'Suspend')),
    out);
}
