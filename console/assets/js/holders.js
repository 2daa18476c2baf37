// Who holds a device at a given time: GET /v1/devices/{id}/holders?at=,
// answered from the log-built holders read model, so it also answers for
// the past. Used by the node page (every GPU at once) and the timeline.

import {get} from './api.js';
import {h, fmtTime, reservationLink} from './dom.js';

/** Holders of each device at `at` (a Date): Map id → [holder]. */
export async function holdersAt(deviceIds, at) {
  const iso = at.toISOString();
  const answers = await Promise.all(deviceIds.map((id) =>
    get(`/devices/${encodeURIComponent(id)}/holders`, {at: iso}).then((a) => [id, a.holders])));
  return new Map(answers);
}

/** A cell listing holders: tenant, reservation, atom and until when. */
export function holdersCell(holders, gpuId) {
  if (!holders || !holders.length) return h('span', {class: 'muted'}, 'free');
  return h('ul', {class: 'plain holders'}, holders.map((x) => h('li', {dataset: {reservation: x.reservationId}},
    h('strong', {}, x.tenant), ' ', reservationLink(x.reservationId),
    x.deviceId !== gpuId ? h('span', {class: 'muted'}, ` on ${x.deviceId.slice(x.deviceId.indexOf('/') + 1)}`) : null,
    h('span', {class: 'muted'}, ` until ${fmtTime(x.to)}`))));
}
