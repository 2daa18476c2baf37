// Charts drawn with the DOM itself: meters are two nested boxes whose inner
// width is set through CSSOM (allowed by the style-src 'self' policy, unlike
// style attributes), and the bookings timeline is an inline SVG. No library,
// no canvas: text stays selectable and links stay keyboard-focusable.

import {h, svg, fmtNumber, fmtTime, shortId} from './dom.js';

/** A horizontal meter of used out of total, labelled for screen readers. */
export function meter(used, total, unit = '', {warnAt = 0.9} = {}) {
  const ratio = total > 0 ? Math.min(used / total, 1) : 0;
  const fill = h('span', {class: 'meter-fill' + (ratio >= warnAt ? ' meter-warn' : '')});
  fill.style.width = `${(ratio * 100).toFixed(1)}%`;
  const text = `${fmtNumber(used)} / ${fmtNumber(total)}${unit ? ' ' + unit : ''}`;
  return h('span', {class: 'meter-wrap'},
    h('span', {class: 'meter', role: 'img', 'aria-label': `${text} used`}, fill),
    h('span', {class: 'meter-text'}, text));
}

/**
 * A stacked bar of a GPU atom pool: allocated, then schedulable but free,
 * then not schedulable (unhealthy, quarantined, cordoned), out of total.
 */
export function atomBar({total, schedulable, allocated}) {
  const part = (n, cls) => {
    const s = h('span', {class: `stack-part ${cls}`});
    s.style.width = total > 0 ? `${(100 * n / total).toFixed(1)}%` : '0';
    return s;
  };
  const free = Math.max(schedulable - allocated, 0);
  const blocked = Math.max(total - Math.max(schedulable, allocated), 0);
  return h('span', {class: 'meter-wrap'},
    h('span', {class: 'stack', role: 'img',
      'aria-label': `${allocated} allocated, ${free} free, ${blocked} not schedulable, of ${total}`},
    part(allocated, 'stack-used'), part(free, 'stack-free'), part(blocked, 'stack-blocked')),
    h('span', {class: 'meter-text'}, `${allocated} used · ${free} free · ${blocked} blocked / ${total}`));
}

const HOUR = 3600e3, DAY = 24 * HOUR;
const STEPS = [HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY];

/** Tick times for the window: a round step giving at most 12 ticks. */
function ticks(from, to) {
  const step = STEPS.find((s) => (to - from) / s <= 12) || STEPS[STEPS.length - 1];
  const offset = new Date(from).getTimezoneOffset() * 60e3; // ticks on local midnights and hours
  const out = [];
  for (let t = Math.ceil((from - offset) / step) * step + offset; t <= to; t += step) out.push(t);
  return {out, step};
}

function tickLabel(t, step, first) {
  const d = new Date(t);
  const day = `${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
  if (step >= DAY) return day;
  const hm = `${String(d.getHours()).padStart(2, '0')}:00`;
  return first || (d.getHours() === 0) ? `${day} ${hm}` : hm;
}

const LABEL_W = 200, LANE_H = 20, GROUP_H = 22, AXIS_H = 36;

/**
 * The bookings timeline: one lane per GPU atom, a bar per booking, grouped
 * (by node). lanes: [{id, label, group, bookings: [{reservationId, tenant,
 * state, from, to}]}]; from, to and now are epoch milliseconds.
 */
export function timelineChart({lanes, from, to, now, width}) {
  const W = Math.max(width, 720), plotW = W - LABEL_W - 8;
  const x = (t) => LABEL_W + ((t - from) / (to - from)) * plotW;
  const groups = [];
  for (const lane of lanes) {
    if (!groups.length || groups[groups.length - 1].name !== lane.group) groups.push({name: lane.group, lanes: []});
    groups[groups.length - 1].lanes.push(lane);
  }
  const H = AXIS_H + groups.length * GROUP_H + lanes.length * LANE_H + 4;
  const root = svg('svg', {class: 'timeline', width: W, height: H, viewBox: `0 0 ${W} ${H}`,
    role: 'group', 'aria-label': `Bookings from ${fmtTime(from)} to ${fmtTime(to)}`});

  const {out, step} = ticks(from, to);
  out.forEach((t, i) => {
    root.append(svg('line', {class: 'tick', x1: x(t), x2: x(t), y1: 0, y2: H}),
      svg('text', {class: 'tick-label', x: x(t) + 3, y: 12}, tickLabel(t, step, i === 0)));
  });

  let y = AXIS_H;
  for (const g of groups) {
    root.append(svg('rect', {class: 'group-band', x: 0, y, width: W, height: GROUP_H}),
      svg('text', {class: 'group-label', x: 6, y: y + 15}, g.name));
    y += GROUP_H;
    for (const lane of g.lanes) {
      root.append(svg('rect', {class: 'lane', x: LABEL_W, y, width: plotW, height: LANE_H}),
        svg('text', {class: 'lane-label', x: 14, y: y + 14}, lane.label, svg('title', {}, lane.id)));
      for (const b of lane.bookings) {
        const x1 = x(Math.max(b.from, from)), x2 = x(Math.min(b.to, to));
        if (x2 <= x1) continue;
        const w = Math.max(x2 - x1, 2);
        const label = `${b.tenant} · ${shortId(b.reservationId)}`;
        root.append(svg('a', {href: `#/reservations/${encodeURIComponent(b.reservationId)}`,
          class: `bar bar-${b.state || 'booked'}`, dataset: {reservation: b.reservationId, device: lane.id}},
        svg('title', {}, `${b.tenant} · ${b.reservationId} · ${b.state || 'booked'}\n` +
          `${fmtTime(b.from)} → ${fmtTime(b.to)} on ${lane.id}`),
        svg('rect', {x: x1, y: y + 3, width: w, height: LANE_H - 6, rx: 3}),
        w > 70 ? svg('text', {class: 'bar-label', x: x1 + 4, y: y + 14}, label.slice(0, Math.floor((w - 8) / 6.5))) : null));
      }
      y += LANE_H;
    }
  }
  if (now > from && now < to) {
    root.append(svg('line', {class: 'now', x1: x(now), x2: x(now), y1: 18, y2: H}),
      svg('text', {class: 'now-label', x: x(now) + 3, y: 30}, 'now'));
  }
  return root;
}
