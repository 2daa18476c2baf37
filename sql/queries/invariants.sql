-- Invariant queries of the capacity core. They read several tables each, so
-- they live together here rather than in one table's file. Each returns the
-- violating rows: an empty result is a pass. `compute check` and the torture
-- test run the same queries (package invariants).

-- name: InvariantBookingOverlaps :many
-- Rule 1 (redundant with the exclusion constraint, which is the point). It
-- must not read the constraint's GiST index, which may have lost entries:
-- `device_id COLLATE "C"` and range_overlaps() (the function behind &&)
-- cannot be planned on it.
SELECT a.device_id, a.id AS first_id, b.id AS second_id,
       a.allocation_id AS first_allocation, b.allocation_id AS second_allocation
  FROM device_bookings a
  JOIN device_bookings b ON b.device_id COLLATE "C" = a.device_id AND a.id < b.id
   AND range_overlaps(a.during, b.during)
 ORDER BY a.device_id, a.id;

-- name: InvariantParentChildOverlaps :many
-- Rule 2: no GPU booked while one of its atoms is booked at an overlapping time.
SELECT p.device_id AS gpu_id, c.device_id AS atom_id,
       p.allocation_id AS gpu_allocation, c.allocation_id AS atom_allocation
  FROM device_bookings p
  JOIN devices d ON d.parent_id = p.device_id COLLATE "C"
  JOIN device_bookings c ON c.device_id COLLATE "C" = d.id AND range_overlaps(c.during, p.during)
 ORDER BY p.device_id, c.device_id;

-- name: InvariantAtomRule :many
-- Rule 2: a GPU is never bookable while it has live atoms.
SELECT g.id FROM devices g
 WHERE g.kind = 'gpu' AND g.bookable
   AND EXISTS (SELECT 1 FROM devices a WHERE a.parent_id = g.id AND NOT a.retired)
 ORDER BY g.id;

-- name: InvariantNodeResourceDrift :many
-- Rule 3: each counter equals the sum of its live allocations and is within
-- floor(allocatable * ratio).
SELECT r.node_id, r.resource, r.allocated, floor(r.allocatable * r.ratio)::bigint AS capacity,
       coalesce(s.total, 0)::bigint AS live_total
  FROM node_resources r
  LEFT JOIN LATERAL (
       SELECT sum(CASE r.resource WHEN 'vcpu' THEN a.vcpu WHEN 'memory' THEN a.memory ELSE a.disk END) AS total
         FROM allocations a WHERE a.node_id = r.node_id AND a.released_at IS NULL) s ON true
 WHERE r.allocated <> coalesce(s.total, 0) OR r.allocated < 0
    OR r.allocated > floor(r.allocatable * r.ratio)
 ORDER BY r.node_id, r.resource;

-- name: InvariantRollupDrift :many
-- Rule 3: each pool rollup equals the sum of its nodes' counters.
SELECT pr.pool_id, pr.resource, pr.allocated, pr.capacity,
       coalesce(s.allocated, 0)::bigint AS nodes_allocated, coalesce(s.capacity, 0)::bigint AS nodes_capacity
  FROM pool_capacity_rollup pr
  LEFT JOIN LATERAL (
       SELECT sum(r.allocated) AS allocated, sum(floor(r.allocatable * r.ratio)) AS capacity
         FROM node_resources r JOIN nodes n ON n.id = r.node_id
        WHERE n.pool_id = pr.pool_id AND r.resource = pr.resource) s ON true
 WHERE pr.allocated <> coalesce(s.allocated, 0) OR pr.capacity <> coalesce(s.capacity, 0)
 ORDER BY pr.pool_id, pr.resource;

-- name: InvariantQuotaDrift :many
-- Rule 5: used equals the charges of the tenant's non-terminal reservations
-- and is within max.
SELECT q.tenant_id, q.resource, q.used, q.max, coalesce(s.charged, 0)::bigint AS charged
  FROM quota_usage q
  LEFT JOIN LATERAL (
       SELECT sum((r.charges ->> q.resource)::bigint) AS charged FROM reservations r
        WHERE r.tenant_id = q.tenant_id AND r.state IN ('pending', 'booked', 'active')) s ON true
 WHERE q.used <> coalesce(s.charged, 0) OR q.used < 0 OR q.used > q.max
 ORDER BY q.tenant_id, q.resource;

-- name: InvariantAllocationState :many
-- Booked and active reservations hold exactly one live allocation; others none.
SELECT r.id, r.state, count(a.id)::bigint AS live_allocations
  FROM reservations r
  LEFT JOIN allocations a ON a.reservation_id = r.id AND a.released_at IS NULL
 GROUP BY r.id, r.state
HAVING (r.state IN ('booked', 'active') AND count(a.id) <> 1)
    OR (r.state NOT IN ('booked', 'active') AND count(a.id) <> 0)
 ORDER BY r.id;

-- name: InvariantStrayBookings :many
-- Bookings that outlive their allocation, or belong to none (a leaked probe):
-- capacity that nothing holds but nobody can book.
SELECT b.id, b.device_id, b.allocation_id FROM device_bookings b
  LEFT JOIN allocations a ON a.id = b.allocation_id
 WHERE a.id IS NULL OR (a.released_at IS NOT NULL AND upper(b.during) > a.released_at)
 ORDER BY b.id;

-- name: InvariantPriorityClasses :many
-- Every reservation is of an existing class, with the value and flag it
-- copied from it (classes do not change once created).
SELECT r.id, r.priority_class, r.priority, r.preemptible FROM reservations r
  LEFT JOIN priority_classes c ON c.name = r.priority_class
 WHERE c.name IS NULL OR c.value <> r.priority OR c.preemptible <> r.preemptible
 ORDER BY r.id;

-- name: InvariantEventVersions :many
-- Every committed transition has exactly one outbox event: each aggregate's
-- events carry versions 1..version, once each. Once retention has pruned a
-- prefix of the log (outbox_pruned), an aggregate's oldest events may be
-- gone, all of them too: the events kept must then be its newest versions,
-- min..version, once each.
WITH aggs (subject, version) AS (
  SELECT 'sites/' || id, version FROM sites
  UNION ALL SELECT 'pools/' || id, version FROM pools
  UNION ALL SELECT 'nodes/' || id, version FROM nodes
  UNION ALL SELECT 'devices/' || id, version FROM devices WHERE kind = 'gpu'
  UNION ALL SELECT 'reservations/' || id, version FROM reservations
  UNION ALL SELECT 'quotas/' || tenant_id || '/' || resource, version FROM quota_usage
  -- The classes migration 0032 inserted have no event.
  UNION ALL SELECT 'priority-classes/' || name, version FROM priority_classes WHERE created_by <> 'migration'
  UNION ALL SELECT 'tenants/' || tenant_id || '/priority-classes', version FROM tenant_priority_class_sets
  UNION ALL SELECT 'tenants/' || tenant_id || '/fair-share', version FROM tenant_fair_shares
), ev AS (
  SELECT o.subject, count(*) AS events, count(DISTINCT o.data ->> 'version') AS distinct_versions,
         min((o.data ->> 'version')::bigint) AS min_version, max((o.data ->> 'version')::bigint) AS max_version
    FROM outbox o WHERE o.data ? 'version' GROUP BY o.subject
), kept AS (
  -- The versions an aggregate's events must cover: all of them, or
  -- after pruning only those from its oldest event kept (none when none is).
  SELECT a.subject, a.version, coalesce(e.events, 0) AS events, coalesce(e.distinct_versions, 0) AS distinct_versions,
         coalesce(e.max_version, 0) AS max_version,
         CASE WHEN NOT EXISTS (SELECT 1 FROM outbox_pruned) THEN a.version
              WHEN e.events IS NULL THEN 0
              ELSE a.version - e.min_version + 1 END AS expected
    FROM aggs a LEFT JOIN ev e ON e.subject = a.subject
)
SELECT k.subject::text AS subject, k.version::bigint AS version, k.events::bigint AS events,
       k.distinct_versions::bigint AS distinct_versions, k.max_version::bigint AS max_version
  FROM kept k
 WHERE k.events <> k.expected OR k.distinct_versions <> k.expected
    OR (k.events > 0 OR k.expected > 0) AND k.max_version <> k.version
 ORDER BY 1;

-- name: InvariantEligibilityEvents :many
-- The node and GPU events that change eligibility, in sequence order (see
-- device_bookings.created_seq for why seq and not (txid, seq)).
SELECT txid, seq, type, subject, data FROM outbox
 WHERE type = ANY(sqlc.arg(types)::text[])
 ORDER BY seq;

-- name: InvariantBookingsInOrder :many
-- Every booking of an allocation with what eligibility needs, in the order
-- was written, on the outbox's sequence.
SELECT b.id, b.device_id, b.created_seq, d.node_id, coalesce(d.parent_id, d.id)::text AS gpu_id,
       coalesce(ARRAY(SELECT jsonb_array_elements_text(coalesce(r.spec -> 'tolerations', '[]'))), '{}')::text[] AS tolerations
  FROM device_bookings b
  JOIN devices d ON d.id = b.device_id COLLATE "C" -- never a GiST scan (see InvariantBookingOverlaps)
  JOIN allocations a ON a.id = b.allocation_id
  JOIN reservations r ON r.id = a.reservation_id
 ORDER BY b.created_seq;

-- name: InvariantPreemptionPriority :many
-- Preemption (docs/concepts/priority.md#preemption) displaces only a
-- preemptible reservation, and only for a strictly higher priority; the
-- record is what the checks of the preempting transaction relied on, so
-- each reservation_preemptions row must agree with both reservations: the
-- victim preempted, preemptible, of the priority recorded; the preemptor
-- of the priority recorded, strictly higher (the table's CHECK says so of
-- the recorded values only). And every preempted reservation has its
-- row (recorded false): a transition to preempted without it had no
-- preemptor.
SELECT rp.victim_id AS reservation_id, rp.preemptor_id, v.state, v.preemptible, v.priority,
       rp.victim_priority AS recorded_priority, p.priority AS preemptor_priority,
       rp.preemptor_priority AS recorded_preemptor_priority, true AS recorded
  FROM reservation_preemptions rp
  JOIN reservations v ON v.id = rp.victim_id
  JOIN reservations p ON p.id = rp.preemptor_id
 WHERE v.state <> 'preempted' OR NOT v.preemptible OR v.priority <> rp.victim_priority
    OR p.priority <> rp.preemptor_priority OR rp.preemptor_priority <= rp.victim_priority
 UNION ALL
SELECT r.id, '', r.state, r.preemptible, r.priority, 0, 0, 0, false
  FROM reservations r
 WHERE r.state = 'preempted' AND NOT EXISTS (SELECT 1 FROM reservation_preemptions rp WHERE rp.victim_id = r.id)
 ORDER BY 1;

-- name: InvariantPreemptedHoldings :many
-- A preempted reservation holds nothing from the instant it was displaced:
-- no live allocation, and no booking that extends past preempted_at (or
-- its allocation's release, for a preempted reservation with no record,
-- which InvariantPreemptionPriority reports). The end releases as any
-- release does (AllocationReleaseWithBookings): a booking that had not
-- started is deleted, a running one is cut at the release instant, which
-- is no later than preempted_at (same transaction; the record is written
-- after the release). booking_id 0 is a live allocation without such a
-- booking; the instants are text, as either may be unbounded.
SELECT r.id AS reservation_id, a.id AS allocation_id, (a.released_at IS NULL)::boolean AS live,
       coalesce(b.id, 0)::bigint AS booking_id, coalesce(b.device_id, '')::text AS device_id,
       coalesce(upper(b.during)::text, 'unbounded')::text AS booked_until,
       coalesce(coalesce(rp.preempted_at, a.released_at)::text, 'never')::text AS cut
  FROM reservations r
  LEFT JOIN reservation_preemptions rp ON rp.victim_id = r.id
  JOIN allocations a ON a.reservation_id = r.id
  LEFT JOIN device_bookings b ON b.allocation_id = a.id
   AND coalesce(upper(b.during), 'infinity'::timestamptz) > coalesce(rp.preempted_at, a.released_at, '-infinity'::timestamptz)
 WHERE r.state = 'preempted' AND (a.released_at IS NULL OR b.id IS NOT NULL)
 ORDER BY r.id, a.id, b.id;

-- name: InvariantPreemptionGrace :many
-- A preempted reservation's workloads get its class's grace between
-- SIGTERM and the kill, and then its node must say they are gone: no
-- instance of it is unfinished (requested, provisioning, running or
-- stopping: not stopped, failed or succeeded) once preempted_at, its
-- grace and slack_seconds have passed (compute_now()). The slack
-- (invariants.PreemptionGraceSlack) covers the unassign's dispatch and the
-- daemon's report; a node that stays away longer is reported here too, as
-- its workloads may still hold the devices the preemptor was given.
SELECT i.id AS instance_id, i.state, i.node_id, rp.victim_id AS reservation_id, rp.preempted_at, rp.grace_seconds
  FROM reservation_preemptions rp
  JOIN instances i ON i.reservation_id = rp.victim_id
 WHERE i.state IN ('requested', 'provisioning', 'running', 'stopping')
   AND compute_now() > rp.preempted_at + make_interval(secs => rp.grace_seconds + sqlc.arg(slack_seconds)::float8)
 ORDER BY rp.victim_id, i.id;

-- name: InvariantUsageHeld :many
-- Billing bills what was held. The usage windows of every reservation that
-- has ended (final in the usage-windows projection) add up to the interval
-- its allocation held in the write model: from the later of the
-- reservation's start and the allocation's creation (its booking) to the
-- earlier of its end and the allocation's release, each instant rounded
-- down to the millisecond as the windows are (RmUsageWindowRecompute); and
-- their device_ms to that times the atoms the allocation holds. Windows
-- written before they were measured that way rounded each window down, so
-- billed_ms may be 1 ms short, never more and never over. The projection
-- only marks a reservation final when it applies its end, after which the
-- write model no longer changes, so a projection that lags is not a
-- violation here. allocation_found false: the windows name an allocation
-- the write model lacks.
SELECT u.reservation_id, u.allocation_id, (a.id IS NOT NULL)::boolean AS allocation_found,
       coalesce(h.ms, 0)::bigint AS held_ms, coalesce(cardinality(a.device_ids), 0)::int AS devices,
       coalesce(w.reserved_ms, 0)::bigint AS billed_ms, coalesce(w.device_ms, 0)::bigint AS billed_device_ms
  FROM rm_usage_allocations u
  LEFT JOIN allocations a ON a.id = u.allocation_id
  LEFT JOIN reservations r ON r.id = a.reservation_id
  LEFT JOIN LATERAL (
       SELECT greatest(floor(extract(epoch FROM least(upper(r.during), a.released_at)) * 1000)
                     - floor(extract(epoch FROM greatest(lower(r.during), a.created_at)) * 1000), 0) AS ms) h ON true
  LEFT JOIN LATERAL (
       SELECT sum(x.reserved_ms) AS reserved_ms, sum(x.device_ms) AS device_ms
         FROM rm_usage_windows x WHERE x.reservation_id = u.reservation_id) w ON true
 WHERE u.final
   AND (a.id IS NULL
        OR coalesce(h.ms, 0) - coalesce(w.reserved_ms, 0) NOT IN (0, 1)
        OR coalesce(w.device_ms, 0) <> coalesce(w.reserved_ms, 0) * cardinality(a.device_ids))
 ORDER BY u.reservation_id;
