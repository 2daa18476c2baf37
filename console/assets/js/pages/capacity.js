// Capacity and quotas as bars. Operators see each pool's scalars and GPU
// atoms (GET /v1/pools/{id}/capacity) and every tenant's quotas; a tenant
// sees its own. Quotas are read from GET
// /v1/tenants/{t}/quotas when the server has it: without it the page says
// so instead of guessing.

import {get, listAll, optional, itemsOf} from '../api.js';
import {h, replace, table, row, notice} from '../dom.js';
import {meter, atomBar} from '../charts.js';
import {ofTypes} from '../live.js';

export async function render(ctx) {
  const op = ctx.me.role === 'operator';
  const pools = h('div', {id: 'pool-capacity'});
  const quotas = h('div', {id: 'quotas'});
  const tenants = new Set([ctx.me.tenant]);
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
      seen.forEach((x) => tenants.add(x.id));
    }
    const answers = await Promise.all([...tenants].sort().map(async (t) =>
      [t, await optional(`/tenants/${encodeURIComponent(t)}/quotas`)]));
    if (!ctx.alive()) return;
    if (answers.every(([, a]) => a === null)) {
      return replace(quotas, notice('info', 'This server does not serve GET /v1/tenants/{tenant}/quotas yet, so quotas cannot be shown. ',
        op ? 'They are set with PUT /v1/tenants/{tenant}/quotas/{resource}.' : ''));
    }
    replace(quotas, ...answers.map(([t, a]) => quotaView(t, a)));
  };
  ctx.cleanup(ctx.live.whenChanged(ofTypes('reservation.', 'quota.', 'node.', 'gpu.', 'device.'), (p) => Promise.all([
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

/** One tenant's quotas, whatever shape the answer has: a list or a map. */
function quotaView(tenant, answer) {
  if (answer === null) return null;
  let items = itemsOf(answer.quotas || answer);
  if (!items.length && answer && typeof answer === 'object' && !Array.isArray(answer)) {
    items = Object.entries(answer).filter(([, v]) => v && typeof v === 'object' && 'max' in v)
      .map(([resource, v]) => ({resource, ...v}));
  }
  return h('section', {class: 'card', dataset: {tenant}},
    h('h3', {}, 'Tenant ', h('span', {class: 'mono'}, tenant)),
    items.length ? table(['Resource', 'Used / limit'], items.sort((a, b) => a.resource.localeCompare(b.resource))
      .map((q) => row({dataset: {resource: q.resource}}, q.resource, meter(q.used || 0, q.max || 0))))
      : h('p', {class: 'muted'}, 'No quotas set.'));
}
