-- Preemption (docs/concepts/priority.md#preemption). The plan is read
-- without locks (PreemptionVictims, PreemptionBlockers, with the placement
-- candidates); the preempting transaction then takes its locks in the
-- global order and checks every victim again under them.

-- name: PreemptionMayPreempt :one
-- Whether a reservation of priority may displace anything at all: some
-- preemptible class has a lower value. The pending retry asks this before
-- it reads a plan.
SELECT EXISTS (SELECT 1 FROM priority_classes WHERE preemptible AND value < sqlc.arg(priority)::int)::boolean;

-- name: PreemptionVictims :many
-- The reservations a request of the given priority could displace on the
-- nodes of a pool (pool_id) or a site (site_id): booked or active,
-- preemptible, of a strictly lower priority, holding a live allocation;
-- with the allocation's scalars, what is left of its window and its
-- class's grace (30 s, the column's default, when the class is gone); its
-- start and the clock, which say whether a preemptor that starts later
-- may cut it back instead (commands' deferrable).
SELECT a.node_id, r.id AS reservation_id, r.tenant_id, r.version, r.priority,
       lower(r.during)::timestamptz AS start_ts, compute_now()::timestamptz AS now,
       (extract(epoch FROM upper(r.during) - GREATEST(lower(r.during), compute_now())) * 1000)::bigint AS remaining_ms,
       a.id AS allocation_id, a.vcpu, a.memory, a.disk,
       coalesce((SELECT pc.grace_seconds FROM priority_classes pc WHERE pc.name = r.priority_class), 30)::int AS grace_seconds
  FROM nodes n
  JOIN allocations a ON a.node_id = n.id AND a.released_at IS NULL
  JOIN reservations r ON r.id = a.reservation_id
 WHERE (n.pool_id = sqlc.narg(pool_id)::text OR n.site_id = sqlc.narg(site_id)::text)
   AND r.state IN ('booked', 'active') AND r.preemptible AND r.priority < sqlc.arg(priority)::int
 ORDER BY a.node_id, r.id;

-- name: PreemptionBlockers :many
-- Every booking in the window [from_ts, to_ts) (from compute_now() when it
-- began, as NodePlacementCandidates counts it) on the atoms of the nodes of
-- a pool or site that match the request as DeviceFreeAtoms matches them
-- (bookable, healthy, not quarantined, nor their GPU), with the
-- reservation whose live allocation holds it ('' for any other booking,
-- such as a GPU's mode change): an atom comes free only when every
-- reservation booking it is displaced.
SELECT d.node_id, d.id AS device_id, coalesce(a.reservation_id, '')::text AS reservation_id
  FROM nodes n
  JOIN devices d ON d.node_id = n.id
  LEFT JOIN devices p ON p.id = d.parent_id
  CROSS JOIN LATERAL (SELECT LEAST(GREATEST(sqlc.arg(from_ts)::timestamptz, compute_now()),
                                    sqlc.arg(to_ts)::timestamptz) AS from_ts) w
  JOIN device_bookings b ON b.device_id COLLATE "C" = d.id
   AND coalesce(upper(b.during), 'infinity'::timestamptz) >= w.from_ts
   AND range_overlaps(b.during, tstzrange(w.from_ts, sqlc.arg(to_ts)::timestamptz, '[)'))
  LEFT JOIN allocations a ON a.id = b.allocation_id AND a.released_at IS NULL
 WHERE (n.pool_id = sqlc.narg(pool_id)::text OR n.site_id = sqlc.narg(site_id)::text)
   AND d.bookable AND d.kind = sqlc.arg(kind)
   AND (sqlc.narg(model)::text IS NULL OR d.model = sqlc.narg(model)::text)
   AND (sqlc.narg(profile)::text IS NULL OR d.profile = sqlc.narg(profile)::text)
   AND d.health = 'healthy' AND NOT d.quarantined
   AND (p.id IS NULL OR (p.health = 'healthy' AND NOT p.quarantined))
 ORDER BY d.node_id, d.id, a.reservation_id;

-- name: QuotaUsageLockTenants :many
-- Every quota row of the tenants, locked FOR UPDATE in (tenant, resource)
-- order: a preempting transaction refunds its victims' tenants and charges
-- its own, so it takes all their rows first, in the one order every such
-- transaction uses (quota_usage is first in the lock order; a create or a
-- release locks one tenant's rows, in resource order, a subsequence).
SELECT tenant_id, resource FROM quota_usage
 WHERE tenant_id = ANY(sqlc.arg(tenants)::text[])
 ORDER BY tenant_id, resource FOR UPDATE;

-- name: DeviceLockNodeForPreemption :many
-- Every device of a node, in id order, FOR NO KEY UPDATE: a preemptor takes
-- the node's devices before it ends its victims (whose reservation rows an
-- extension locks after the devices), so that it waits for an extension of
-- a victim rather than deadlocking with it. A placer takes a subset of the
-- same rows, in the same order.
SELECT id FROM devices WHERE node_id = sqlc.arg(node_id) ORDER BY id FOR NO KEY UPDATE;

-- name: ReservationPreemptionRecord :exec
-- Records a preemption (reservation_preemptions), with the victim's
-- transition in one transaction.
INSERT INTO reservation_preemptions (victim_id, preemptor_id, victim_priority, preemptor_priority, grace_seconds)
VALUES (sqlc.arg(victim_id), sqlc.arg(preemptor_id), sqlc.arg(victim_priority), sqlc.arg(preemptor_priority),
        sqlc.arg(grace_seconds));

-- name: NodeResourceLockForPreemption :one
-- Every scalar counter of a node, then the node's pool's rollup rows, each
-- in resource order, FOR UPDATE: a preemptor takes them, after the devices,
-- before it ends its victims. Ending a victim bumps the node's generation
-- (node_desired, last in the lock order), and the preemptor's own booking
-- and any later victim's end come after it: with the counters held first,
-- nothing taken after node_desired can wait for a release or expiry on the
-- node, which takes the counters, then the rollup, then node_desired.
WITH counters AS MATERIALIZED (
  SELECT r.resource FROM node_resources r
   WHERE r.node_id = sqlc.arg(node_id)
   ORDER BY r.resource FOR UPDATE
), rollup AS MATERIALIZED (
  SELECT p.resource FROM pool_capacity_rollup p
   WHERE p.pool_id = (SELECT n.pool_id FROM nodes n WHERE n.id = sqlc.arg(node_id))
   ORDER BY p.resource FOR UPDATE
)
SELECT (SELECT count(*) FROM counters)::bigint AS counters, (SELECT count(*) FROM rollup)::bigint AS rollup_rows;
