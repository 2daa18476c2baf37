// Fleet: sites → pools → nodes, each node with its liveness, why it takes
// no bookings, its conditions, generations and use. Redrawn live when a
// node, device or reservation event arrives.

import {h, replace, table, row, badge, notice, fmtAge, nodeLink} from '../dom.js';
import {meter} from '../charts.js';
import {loadFleet, blockers} from '../fleet.js';
import {ofTypes} from '../live.js';

export async function render(ctx) {
  const body = h('div', {});
  replace(ctx.el, h('h1', {}, 'Fleet'), body);
  const draw = async (minPosition) => {
    const fleet = await loadFleet(minPosition);
    if (ctx.alive()) replace(body, ...view(fleet));
  };
  ctx.cleanup(ctx.live.whenChanged(ofTypes('node.', 'gpu.', 'device.', 'reservation.', 'pool.', 'site.'),
    (p) => draw(p).catch((err) => body.prepend(notice('error', err.message)))));
  await draw();
}

function view({sites, nodes, sitesKnown}) {
  if (!nodes.length) return [notice('info', 'No nodes are registered yet (POST /v1/nodes).')];
  const connected = nodes.filter((n) => n.liveness === 'connected').length;
  const blocked = nodes.filter((n) => blockers(n).length).length;
  const pools = sites.reduce((k, s) => k + s.pools.length, 0);
  return [
    h('p', {class: 'summary', id: 'fleet-summary'},
      `${plural(nodes.length, 'node')} in ${plural(pools, 'pool')} at ${plural(sites.length, 'site')} · ` +
      `${connected} connected · ${blocked} not schedulable`),
    sitesKnown ? null : h('p', {class: 'muted'}, 'Sites and pools are known here by their nodes.'),
    ...sites.map((s) => h('section', {class: 'site', dataset: {site: s.id}},
      h('h2', {}, 'Site ', h('span', {class: 'mono'}, s.id || '(unknown)'), s.name ? h('span', {class: 'muted'}, ` — ${s.name}`) : null),
      ...s.pools.map(poolView))),
  ];
}

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

function poolView(p) {
  const q = encodeURIComponent(p.id);
  return h('section', {class: 'pool', dataset: {pool: p.id}},
    h('h3', {}, 'Pool ', h('span', {class: 'mono'}, p.id), p.kind ? h('span', {class: 'muted'}, ` · ${p.kind}`) : null,
      h('span', {class: 'muted'}, ` · ${p.nodes.length} nodes`)),
    h('p', {class: 'actions'},
      h('a', {class: 'btn btn-small', href: `#/timeline?pool=${q}`}, 'Bookings timeline'), ' ',
      h('a', {class: 'btn btn-small', href: `#/capacity?pool=${q}`}, 'Capacity')),
    table(['Node', 'Liveness', 'Heartbeat', 'Not schedulable', 'Conditions', 'Generation', 'vCPU', 'Memory (MB)', 'Bookings'],
      p.nodes.map(nodeRow)));
}

function nodeRow(n) {
  const why = blockers(n);
  const conditions = (n.conditions || []).filter((c) => c.status);
  const lagging = n.observedGeneration < n.generation;
  return row({dataset: {node: n.id}},
    nodeLink(n.id),
    badge(n.liveness),
    n.secondsSinceHeartbeat === null ? h('span', {class: 'muted'}, 'never') : `${fmtAge(n.secondsSinceHeartbeat)} ago`,
    why.length ? why.map((r) => badge(r, 'warn')) : h('span', {class: 'muted'}, '—'),
    conditions.length ? conditions.map((c) => h('span', {class: 'cond', title: c.message || ''}, badge(c.type, 'warn'))) : h('span', {class: 'muted'}, '—'),
    h('span', {class: lagging ? 'warn-text' : '', title: 'observed / desired'},
      `${n.observedGeneration} / ${n.generation}`, lagging ? ' (behind)' : ''),
    meter(n.vcpu.allocated, n.vcpu.capacity),
    meter(n.memoryMb.allocated, n.memoryMb.capacity),
    String(n.liveReservations));
}
