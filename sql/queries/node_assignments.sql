-- name: NodeDesiredBump :one
-- One change of the node's desired spec (an assignment queued, a
-- scheduling flag changed), in the transaction of the change: generation
-- + 1, the first being 1. Last in the lock order.
INSERT INTO node_desired AS d (node_id, generation) VALUES (sqlc.arg(node_id), 1)
ON CONFLICT (node_id) DO UPDATE SET generation = d.generation + 1, updated_at = compute_now()
RETURNING generation;

-- name: NodeDesiredBumpAt :one
-- NodeDesiredBump that also answers compute_now(), for a job queued in the
-- next round trip with its event (NodeCommandInsertAt).
INSERT INTO node_desired AS d (node_id, generation) VALUES (sqlc.arg(node_id), 1)
ON CONFLICT (node_id) DO UPDATE SET generation = d.generation + 1, updated_at = compute_now()
RETURNING generation, compute_now()::timestamptz AS now;

-- name: NodeDesiredBumpAtIfAssigned :one
-- NodeDesiredBumpAt for the end of an allocation, only when the node's
-- daemon may hold it: an assign of it was ever queued. No row when none
-- was (its window had not begun: assignments.go): the daemon never heard
-- of it, there is nothing to take back, and the node's desired spec is
-- unchanged. unassign_state is the state of the job already under the
-- allocation's unassign key (unassign:<id>, of tenant_id), '' when there
-- is none: whether the end queues another (unassignJob).
INSERT INTO node_desired AS d (node_id, generation)
SELECT sqlc.arg(node_id)::text, 1
 WHERE EXISTS (SELECT 1 FROM node_commands c
                WHERE c.node_id = sqlc.arg(node_id)::text AND c.allocation_id = sqlc.arg(allocation_id)::text
                  AND c.kind = 'assign')
ON CONFLICT (node_id) DO UPDATE SET generation = d.generation + 1, updated_at = compute_now()
RETURNING generation, compute_now()::timestamptz AS now,
          coalesce((SELECT c.state FROM node_commands c
                     WHERE c.node_id = sqlc.arg(node_id)::text AND c.tenant_id = sqlc.arg(tenant_id)::text
                       AND c.idempotency_key = 'unassign:' || sqlc.arg(allocation_id)::text), '')::text AS unassign_state;

-- name: NodeAllocationAssignQueued :one
-- Whether an assign of the allocation was ever queued to its node: from
-- then on the daemon may hold it, and a change of its window goes to the
-- daemon too.
SELECT EXISTS (SELECT 1 FROM node_commands c
                WHERE c.node_id = sqlc.arg(node_id)::text AND c.allocation_id = sqlc.arg(allocation_id)::text
                  AND c.kind = 'assign')::boolean AS queued;

-- name: NodeDesiredGeneration :one
-- The node's desired generation; 0 for a node that never changed.
SELECT COALESCE((SELECT d.generation FROM node_desired d WHERE d.node_id = sqlc.arg(node)::text), 0)::bigint AS generation;

-- name: AllocationAssignment :one
-- What an allocation's assign carries: its devices and scalars, and its
-- reservation's window, tenant and state, and its node's pool's network
-- mode.
SELECT a.id, a.reservation_id, a.node_id, a.device_ids, a.vcpu, a.memory, a.disk,
       (a.released_at IS NOT NULL)::boolean AS released,
       r.tenant_id, r.state, lower(r.during)::timestamptz AS start_ts, upper(r.during)::timestamptz AS end_ts,
       (SELECT p.workload_network FROM nodes n JOIN pools p ON p.id = n.pool_id WHERE n.id = a.node_id)::text
         AS workload_network
  FROM allocations a JOIN reservations r ON r.id = a.reservation_id
 WHERE a.id = sqlc.arg(id);

-- name: AssignmentDevices :many
-- The atoms of an allocation as the daemon needs them: a GPU, a MIG
-- instance (with its GPU, and its MIG-… UUID once an inventory named it) or
-- a slot (with its GPU and its kind, time-slice or mps).
SELECT id, kind, parent_id, profile, mig_uuid FROM devices WHERE id = ANY(sqlc.arg(ids)::text[]);

-- name: NodeLiveAssignments :many
-- The allocations the node should hold now: live, of an active reservation
-- or of a booked one whose assign was queued already (at booking, its
-- window having begun). A booking that starts later reaches the daemon
-- with its activation (assignment_timing.go), not when its start passes:
-- counting it from then had the resync or a reconnecting daemon's
-- reconcile queue an assign the activation then queued again.
SELECT a.id AS allocation_id, r.id AS reservation_id, r.tenant_id, upper(r.during)::timestamptz AS end_ts
  FROM allocations a JOIN reservations r ON r.id = a.reservation_id
 WHERE a.node_id = sqlc.arg(node_id) AND a.released_at IS NULL AND r.state IN ('booked', 'active')
   AND (r.state = 'active'
        OR EXISTS (SELECT 1 FROM node_commands c
                    WHERE c.node_id = a.node_id AND c.allocation_id = a.id AND c.kind = 'assign'))
 ORDER BY a.id;

-- name: NodeAssignmentJobs :many
-- The node's assign and unassign jobs, per allocation oldest first. An
-- unassign of an allocation the control plane does not know names it in
-- its payload only.
SELECT c.id, COALESCE(c.allocation_id, c.payload->>'allocationId')::text AS allocation_id, c.kind, c.state,
       c.tenant_id, c.idempotency_key, COALESCE(c.payload->>'end', '')::text AS payload_end, c.created_at
  FROM node_commands c
 WHERE c.node_id = sqlc.arg(node_id) AND c.kind IN ('assign', 'unassign')
 ORDER BY 2, c.seq;

-- name: AllocationAssignedBefore :one
-- Whether an assign of the allocation other than job succeeded: the daemon
-- may then hold it.
SELECT EXISTS (SELECT 1 FROM node_commands
                WHERE allocation_id = sqlc.arg(allocation_id) AND kind = 'assign' AND state = 'succeeded'
                  AND id <> sqlc.arg(job_id)) AS assigned;

-- name: NodeAppliedGeneration :one
-- The generation up to which the node has applied its desired spec, as far
-- as assignment jobs tell: every change below the oldest assign or unassign
-- still open is done (a scheduling flag needs nothing from the daemon), and
-- with none open, all of them.
SELECT LEAST(
         COALESCE((SELECT d.generation FROM node_desired d WHERE d.node_id = sqlc.arg(node)::text), 0),
         COALESCE((SELECT min(c.generation) - 1 FROM node_commands c
                    WHERE c.node_id = sqlc.arg(node)::text AND c.kind IN ('assign', 'unassign')
                      AND c.state IN ('queued', 'sent', 'running')), 9223372036854775807))::bigint AS applied;

-- name: NodeSessionLockAtEpoch :one
-- A daemon report's transaction locks the node's session at the epoch it
-- came in on, before any node job (dispatch holds the session FOR SHARE and
-- then locks the jobs). No row: superseded.
SELECT session_epoch, observed_generation FROM node_sessions
 WHERE node_id = sqlc.arg(node_id) AND session_epoch = sqlc.arg(session_epoch)
   FOR UPDATE;

-- name: NodeSessionLockCurrent :one
-- The node's session, whatever its epoch (the resync's transaction).
SELECT session_epoch, observed_generation FROM node_sessions WHERE node_id = sqlc.arg(node_id) FOR UPDATE;

-- name: NodeSessionRaiseObserved :exec
-- observed_generation only grows within a session (the hello sets it),
-- and never past the node's generation, whatever the daemon reports.
UPDATE node_sessions SET observed_generation = GREATEST(observed_generation, LEAST(sqlc.arg(observed_generation)::bigint,
         COALESCE((SELECT d.generation FROM node_desired d WHERE d.node_id = sqlc.arg(node_id)), 0)))
 WHERE node_id = sqlc.arg(node_id) AND session_epoch = sqlc.arg(session_epoch);

-- name: InstanceListUnfinishedOfAllocationForUpdate :many
-- An allocation's instances on node that have not ended, locked in id
-- order. The node is named so that what one node reports (an unassign it
-- carried out) can only ever reach instances on that node.
SELECT * FROM instances
 WHERE allocation_id = sqlc.arg(allocation_id) AND node_id = sqlc.arg(node_id)
   AND state IN ('requested', 'provisioning', 'running', 'stopping')
 ORDER BY id FOR UPDATE;

-- name: NodeAssignmentDrift :many
-- Nodes whose observed generation has lagged their generation for longer
-- than after_seconds: an assign or unassign of theirs has been open that
-- long (every lag without one is caught up at the next report or resync).
SELECT c.node_id, COALESCE(d.generation, 0)::bigint AS generation,
       COALESCE(s.observed_generation, 0)::bigint AS observed_generation, COALESCE(s.connected, false)::boolean AS connected,
       min(c.created_at)::timestamptz AS oldest_open, count(*) AS open_jobs
  FROM node_commands c
  LEFT JOIN node_desired d ON d.node_id = c.node_id
  LEFT JOIN node_sessions s ON s.node_id = c.node_id
 WHERE c.kind IN ('assign', 'unassign') AND c.state IN ('queued', 'sent', 'running')
 GROUP BY c.node_id, d.generation, s.observed_generation, s.connected
HAVING min(c.created_at) < compute_now() - make_interval(secs => sqlc.arg(after_seconds)::float8)
 ORDER BY c.node_id;

-- name: AllocationDevicesOf :many
-- The devices of allocations, released or not: dispatch reads those of the
-- open unassigns' allocations, to hold back only the assigns that share a
-- GPU with one of them (heldAllocations). slot_kind is the mode of the
-- slots an allocation holds ('' for none), as its reservation asked: a
-- GPU's mode cannot change while they are booked, and the atoms' own
-- profile may have changed since they were released.
SELECT a.id, a.device_ids, coalesce(r.spec->'gpu'->>'slotKind', '')::text AS slot_kind
  FROM allocations a
  JOIN reservations r ON r.id = a.reservation_id
 WHERE a.id = ANY(sqlc.arg(ids)::text[]);
