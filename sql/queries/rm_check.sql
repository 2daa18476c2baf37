-- The read models held to the write model (projections.CheckAgainstWriteModel,
-- `compute check`). Each query compares one read model with the write
-- tables it mirrors in one set-based pass and returns the rows that
-- disagree: 'missing' (in the write model, not in the read model),
-- 'extra' (the reverse) or 'differs' (a mirrored field, the version
-- included). A row is only behind, not diverging, while an event of its
-- subject lies after the projection's cursor: the projection has not
-- applied it yet. The check reads the cursors first (RmCheckCursors, in
-- the same snapshot) and passes its projection's to each query as
-- after_txid, after_seq; every query reads the set, pending, from
-- rm_check_pending_subjects (migration 0076; the column list after its
-- alias is for sqlc), which the planner inlines: the log from the cursor
-- on, planned knowing the cursor, so it costs what the projection lags
-- (docs/benchmarks.md says how PostgreSQL plans it), and the comparison
-- itself reads each table once.
-- The rows come diverging first, then behind, in key order, at most
-- sample_size of them; every row carries the two counts, so the first
-- tells both. d and pending are MATERIALIZED so that each is computed
-- once, not once per reference, and a row's subjects are looked up with
-- IN, which hashes pending once.

-- name: RmCheckCursors :many
-- Each projection's cursor, as rm_check_cursor reads it (the position
-- before every event for one that never ran).
SELECT p.projection::text AS projection, c.txid::xid8 AS txid, c.seq::bigint AS seq
  FROM unnest(sqlc.arg(projections)::text[]) AS p (projection)
 CROSS JOIN LATERAL rm_check_cursor(p.projection) AS c (txid, seq);

-- name: RmCheckReservations :many
WITH pending AS MATERIALIZED (SELECT p.subject FROM rm_check_pending_subjects(sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint) AS p (subject)),
d AS MATERIALIZED (
  SELECT coalesce(r.id, m.id) AS key,
         CASE WHEN m.id IS NULL THEN 'missing' WHEN r.id IS NULL THEN 'extra' ELSE 'differs' END AS kind,
         ('reservations/' || coalesce(r.id, m.id)) IN (SELECT p.subject FROM pending p) AS behind
    FROM reservations r
    FULL JOIN rm_reservations m ON m.id = r.id
   WHERE m.id IS NULL OR r.id IS NULL
      OR (r.tenant_id, r.state, r.version, upper(r.during), r.priority_class, r.priority, r.preemptible,
          CASE WHEN jsonb_typeof(r.conditions) = 'array' THEN r.conditions ELSE '[]'::jsonb END)
         IS DISTINCT FROM
         (m.tenant_id, m.state, m.version, m.end_ts, m.priority_class, m.priority, m.preemptible, m.conditions))
SELECT d.key::text AS key, d.kind::text AS kind, d.behind::boolean AS behind,
       (count(*) FILTER (WHERE NOT d.behind) OVER ())::bigint AS diverging,
       (count(*) FILTER (WHERE d.behind) OVER ())::bigint AS behind_rows
  FROM d ORDER BY d.behind, d.key LIMIT sqlc.arg(sample_size);

-- name: RmCheckFleetNodes :many
-- A node's scalars are its allocatable vCPU, memory and disk and the
-- shrinks of them pending, as RmFleetNodeSeed reads them.
WITH pending AS MATERIALIZED (SELECT p.subject FROM rm_check_pending_subjects(sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint) AS p (subject)),
d AS MATERIALIZED (
  SELECT coalesce(n.id, m.id) AS key,
         CASE WHEN m.id IS NULL THEN 'missing' WHEN n.id IS NULL THEN 'extra' ELSE 'differs' END AS kind,
         ('nodes/' || coalesce(n.id, m.id)) IN (SELECT p.subject FROM pending p) AS behind
    FROM nodes n
    LEFT JOIN (SELECT r.node_id,
                      max(r.allocatable) FILTER (WHERE r.resource = 'vcpu') AS vcpu,
                      max(r.allocatable) FILTER (WHERE r.resource = 'memory') AS memory_mb,
                      max(r.allocatable) FILTER (WHERE r.resource = 'disk') AS disk_gb,
                      max(r.pending_allocatable) FILTER (WHERE r.resource = 'vcpu') AS vcpu_pending,
                      max(r.pending_allocatable) FILTER (WHERE r.resource = 'memory') AS memory_mb_pending,
                      max(r.pending_allocatable) FILTER (WHERE r.resource = 'disk') AS disk_gb_pending
                 FROM node_resources r GROUP BY r.node_id) s ON s.node_id = n.id
    FULL JOIN rm_fleet_nodes m ON m.id = n.id
   WHERE m.id IS NULL OR n.id IS NULL
      OR (n.pool_id, n.cordoned, n.taints, n.version, n.state, n.no_schedule_reasons, n.conditions,
          coalesce(s.vcpu, 0), coalesce(s.memory_mb, 0), coalesce(s.disk_gb, 0),
          s.vcpu_pending, s.memory_mb_pending, s.disk_gb_pending)
         IS DISTINCT FROM
         (m.pool_id, m.cordoned, m.taints, m.version, m.state, m.no_schedule_reasons, m.conditions,
          m.vcpu, m.memory_mb, m.disk_gb, m.vcpu_pending, m.memory_mb_pending, m.disk_gb_pending))
SELECT d.key::text AS key, d.kind::text AS kind, d.behind::boolean AS behind,
       (count(*) FILTER (WHERE NOT d.behind) OVER ())::bigint AS diverging,
       (count(*) FILTER (WHERE d.behind) OVER ())::bigint AS behind_rows
  FROM d ORDER BY d.behind, d.key LIMIT sqlc.arg(sample_size);

-- name: RmCheckFleetDevices :many
-- An atom (a MIG instance or a time-slice slot) is written by the events
-- of its GPU; a device row is behind while an event of its GPU, or of its
-- node, is not yet applied. Health, quarantine and version are the GPU's
-- own: an atom's are not compared.
WITH pending AS MATERIALIZED (SELECT p.subject FROM rm_check_pending_subjects(sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint) AS p (subject)),
d AS MATERIALIZED (
  SELECT coalesce(w.id, m.id) AS key,
         CASE WHEN m.id IS NULL THEN 'missing' WHEN w.id IS NULL THEN 'extra' ELSE 'differs' END AS kind,
         (('devices/' || coalesce(w.id, m.id)) IN (SELECT p.subject FROM pending p)
          OR ('devices/' || coalesce(w.parent_id, m.parent_id, w.id, m.id)) IN (SELECT p.subject FROM pending p)
          OR ('nodes/' || coalesce(w.node_id, m.node_id)) IN (SELECT p.subject FROM pending p)) AS behind
    FROM devices w
    FULL JOIN rm_fleet_devices m ON m.id = w.id
   WHERE m.id IS NULL OR w.id IS NULL
      OR (w.parent_id, w.kind, w.node_id, w.mode, w.profile, w.retired)
         IS DISTINCT FROM (m.parent_id, m.kind, m.node_id, m.mode, m.profile, m.retired)
      OR (w.kind = 'gpu' AND (w.health, w.quarantined, w.version) IS DISTINCT FROM (m.health, m.quarantined, m.version)))
SELECT d.key::text AS key, d.kind::text AS kind, d.behind::boolean AS behind,
       (count(*) FILTER (WHERE NOT d.behind) OVER ())::bigint AS diverging,
       (count(*) FILTER (WHERE d.behind) OVER ())::bigint AS behind_rows
  FROM d ORDER BY d.behind, d.key LIMIT sqlc.arg(sample_size);

-- name: RmCheckFleetAllocations :many
-- What each placed reservation holds, as RmFleetAllocationSeed writes it
-- from the write model: the node and its pool, the atoms, the request's
-- scalars, live while booked or active, the reservation's version. The
-- row of a reservation that ended and has no event left in the log is
-- deleted by retention (RetentionFleetAllocationsPrune): its absence is
-- not divergence, and its presence is only overdue pruning, which
-- `compute check` reports apart.
WITH pending AS MATERIALIZED (SELECT p.subject FROM rm_check_pending_subjects(sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint) AS p (subject)),
w AS (
  SELECT r.id, r.tenant_id, a.node_id, n.pool_id, a.device_ids,
         coalesce((r.spec->>'vcpu')::bigint, 0) AS vcpu, coalesce((r.spec->>'memoryMb')::bigint, 0) AS memory_mb,
         coalesce((r.spec->>'diskGb')::bigint, 0) AS disk_gb, r.state IN ('booked', 'active') AS live, r.version
    FROM allocations a
    JOIN reservations r ON r.id = a.reservation_id
    JOIN nodes n ON n.id = a.node_id),
d AS MATERIALIZED (
  SELECT coalesce(w.id, m.reservation_id) AS key,
         CASE WHEN m.reservation_id IS NULL THEN 'missing' WHEN w.id IS NULL THEN 'extra' ELSE 'differs' END AS kind,
         (('reservations/' || coalesce(w.id, m.reservation_id)) IN (SELECT p.subject FROM pending p)
          OR ('nodes/' || coalesce(w.node_id, m.node_id)) IN (SELECT p.subject FROM pending p)) AS behind
    FROM w
    FULL JOIN rm_fleet_allocations m ON m.reservation_id = w.id
   WHERE (m.reservation_id IS NULL
          AND (w.live OR EXISTS (SELECT 1 FROM outbox o WHERE o.subject = 'reservations/' || w.id)))
      OR w.id IS NULL
      OR (m.reservation_id IS NOT NULL
          AND (w.tenant_id, w.node_id, w.pool_id, w.device_ids, w.vcpu, w.memory_mb, w.disk_gb, w.live, w.version)
              IS DISTINCT FROM
              (m.tenant_id, m.node_id, m.pool_id, m.device_ids, m.vcpu, m.memory_mb, m.disk_gb, m.live, m.version)))
SELECT d.key::text AS key, d.kind::text AS kind, d.behind::boolean AS behind,
       (count(*) FILTER (WHERE NOT d.behind) OVER ())::bigint AS diverging,
       (count(*) FILTER (WHERE d.behind) OVER ())::bigint AS behind_rows
  FROM d ORDER BY d.behind, d.key LIMIT sqlc.arg(sample_size);

-- name: RmCheckDeviceHolders :many
-- Who held an atom is what its allocation booked on it: from the first
-- booking's start to the last one's end (an extension adds a booking). A
-- holder withdrawn before it began (an empty range) has no bookings left
-- and is not compared. The key is "<device> held by <reservation>".
WITH pending AS MATERIALIZED (SELECT p.subject FROM rm_check_pending_subjects(sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint) AS p (subject)),
booked AS (
  SELECT b.device_id, a.reservation_id, tstzrange(min(lower(b.during)), max(upper(b.during)), '[)') AS during
    FROM device_bookings b JOIN allocations a ON a.id = b.allocation_id
   GROUP BY b.device_id, a.reservation_id),
held AS (
  SELECT h.device_id, h.reservation_id, h.during FROM rm_device_holders h WHERE NOT isempty(h.during)),
d AS MATERIALIZED (
  SELECT coalesce(booked.device_id, held.device_id) || ' held by ' || coalesce(booked.reservation_id, held.reservation_id) AS key,
         CASE WHEN held.device_id IS NULL THEN 'missing' WHEN booked.device_id IS NULL THEN 'extra' ELSE 'differs' END AS kind,
         ('reservations/' || coalesce(booked.reservation_id, held.reservation_id)) IN (SELECT p.subject FROM pending p) AS behind
    FROM booked
    FULL JOIN held ON held.device_id = booked.device_id AND held.reservation_id = booked.reservation_id
   WHERE booked.during IS DISTINCT FROM held.during)
SELECT d.key::text AS key, d.kind::text AS kind, d.behind::boolean AS behind,
       (count(*) FILTER (WHERE NOT d.behind) OVER ())::bigint AS diverging,
       (count(*) FILTER (WHERE d.behind) OVER ())::bigint AS behind_rows
  FROM d ORDER BY d.behind, d.key LIMIT sqlc.arg(sample_size);
