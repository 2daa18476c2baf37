-- name: InstanceReservationLock :one
-- The reservation an instance is asked for, locked until the instance is
-- written (so it cannot end, or be released, in between), with whether it
-- may run a workload now: active, and inside its window. A booked
-- reservation may not: another tenant may hold its devices until its
-- window starts. FOR NO KEY UPDATE, not FOR SHARE: two creates on one
-- reservation take turns, so that the count of its unfinished instances
-- (InstanceCountUnfinished) is exact when each checks it.
SELECT r.id, r.tenant_id, r.state, lower(r.during)::timestamptz AS start_ts,
       (r.state = 'active' AND r.during @> compute_now())::boolean AS runnable
  FROM reservations r WHERE r.id = sqlc.arg(id)
   FOR NO KEY UPDATE;

-- name: InstanceCountUnfinished :one
-- How many instances of an allocation have not finished: each holds a
-- process on its node's daemon (instances_allocation_unfinished).
SELECT count(*)::bigint FROM instances
 WHERE allocation_id = sqlc.arg(allocation_id) AND state IN ('requested', 'provisioning', 'running', 'stopping');

-- name: InstanceInsert :one
-- Guarded: zero rows unless the reservation is active at this moment (see
-- InstanceReservationLock), whatever the caller checked before.
INSERT INTO instances (id, tenant_id, reservation_id, allocation_id, node_id, spec, state)
SELECT sqlc.arg(id), sqlc.arg(tenant_id), r.id, sqlc.arg(allocation_id), sqlc.arg(node_id), sqlc.arg(spec), 'requested'
  FROM reservations r
 WHERE r.id = sqlc.arg(reservation_id) AND r.state = 'active' AND r.during @> compute_now()
RETURNING *;

-- name: InstanceGet :one
SELECT * FROM instances WHERE id = sqlc.arg(id);

-- name: InstanceGetForUpdate :one
-- FOR NO KEY UPDATE: node commands that reference the instance check their
-- foreign key with FOR KEY SHARE, which this must not block.
SELECT * FROM instances WHERE id = sqlc.arg(id) FOR NO KEY UPDATE;

-- name: InstanceUpdateState :execrows
-- Guarded by version: zero rows means someone else moved it first. exit_code
-- is set when given (an instance whose process exited), else kept. An
-- instance that ended (stopped, failed, succeeded) is never changed again,
-- whatever the caller checked: its updated_at is when it ended, which
-- retention measures (RetentionInstancesPrune).
UPDATE instances SET state = sqlc.arg(state), reason = sqlc.arg(reason), version = version + 1,
       exit_code = COALESCE(sqlc.narg(exit_code)::integer, exit_code), updated_at = compute_now()
 WHERE id = sqlc.arg(id) AND version = sqlc.arg(version)
   AND state NOT IN ('stopped', 'failed', 'succeeded');

-- name: InstanceListOfReservation :many
-- A keyset page of a reservation's instances in id order (ids are
-- time-ordered: creation order), after after_id ('' for the first page),
-- through instances_reservation (reservation_id, id).
SELECT * FROM instances
 WHERE reservation_id = sqlc.arg(reservation_id) AND id > sqlc.arg(after_id)::text
 ORDER BY id
 LIMIT sqlc.arg(max_rows);

-- name: InstanceListRunningOnNode :many
-- The running and stopping instances of a node's live allocations that an
-- inventory of its session can judge, for the reconcile of what its daemon
-- reports running (ReconcileNodeInstances): those that last changed before
-- the session opened (the daemon takes its inventory after that), or at
-- least min_age_seconds ago. Through allocations_live_node and the
-- allocation's instances.
SELECT i.* FROM allocations a
  JOIN instances i ON i.allocation_id = a.id
  JOIN node_sessions s ON s.node_id = a.node_id
 WHERE a.node_id = sqlc.arg(node_id) AND a.released_at IS NULL
   AND i.state IN ('running', 'stopping')
   AND (i.updated_at < s.opened_at
        OR i.updated_at <= compute_now() - make_interval(secs => sqlc.arg(min_age_seconds)::float8))
 ORDER BY i.id
   FOR NO KEY UPDATE OF i;
