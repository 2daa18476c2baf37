// The fleet as a tree, site → pool → node, built from what the API has.
// GET /v1/nodes is always there; GET /v1/sites and /v1/pools may not be
// yet, so their absence is not an error: a pool is then known by its
// nodes, and its site by GET /v1/pools/{id}/capacity, which names it.

import {get, listAll, optional, itemsOf} from './api.js';

const enc = encodeURIComponent;

/**
 * Loads the fleet (operators only). minPosition makes the node list wait
 * for the event that prompted the reload. Returns {sites: [{id, name,
 * pools: [{id, kind, siteId, nodes, capacity}]}], nodes}.
 */
export async function loadFleet(minPosition = '') {
  const [nodes, sitesAnswer, poolsAnswer] = await Promise.all([
    listAll('/nodes', {minPosition}), optional('/sites'), optional('/pools')]);
  const pools = new Map();
  for (const p of itemsOf(poolsAnswer)) pools.set(p.id, {...p, nodes: []});
  for (const n of nodes) {
    if (!pools.has(n.poolId)) pools.set(n.poolId, {id: n.poolId, nodes: []});
    pools.get(n.poolId).nodes.push(n);
  }
  await Promise.all([...pools.values()].map(async (p) => {
    p.capacity = await get(`/pools/${enc(p.id)}/capacity`, {minPosition}).catch(() => null);
    p.siteId = p.siteId || p.capacity?.siteId || '';
    p.kind = p.kind || p.capacity?.kind || '';
  }));
  const sites = new Map();
  for (const s of itemsOf(sitesAnswer)) sites.set(s.id, {...s, pools: []});
  for (const p of pools.values()) {
    if (!sites.has(p.siteId)) sites.set(p.siteId, {id: p.siteId, pools: []});
    sites.get(p.siteId).pools.push(p);
  }
  const byId = (a, b) => String(a.id).localeCompare(String(b.id));
  const tree = [...sites.values()].sort(byId);
  tree.forEach((s) => { s.pools.sort(byId); s.pools.forEach((p) => p.nodes.sort(byId)); });
  return {sites: tree, nodes, sitesKnown: sitesAnswer !== null, poolsKnown: poolsAnswer !== null};
}

/** Why a node takes no new bookings: the API's reasons, cordon and taints. */
export function blockers(n) {
  const out = [...(n.noScheduleReasons || [])];
  if (n.cordoned) out.push('cordoned');
  for (const t of n.taints || []) out.push(`taint ${t}`);
  return out;
}

/** The atoms of a node's devices: those no other device names as parent. */
export function atomsOf(devices) {
  const parents = new Set(devices.filter((d) => d.parentId).map((d) => d.parentId));
  return devices.filter((d) => !parents.has(d.id));
}

/** A short name for a device: "GPU 3", "GPU 0 / mig-1" for the demo's ids. */
export function deviceLabel(id, nodeId) {
  const prefix = `GPU-${nodeId}-`;
  if (nodeId && id.startsWith(prefix)) return 'GPU ' + id.slice(prefix.length).replace('/', ' / ');
  return id.length > 24 ? id.slice(0, 12) + '…' + id.slice(-8) : id;
}
