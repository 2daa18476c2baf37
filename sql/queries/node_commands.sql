-- name: NodeCommandInsert :one
-- Zero rows: the node already has a command under this idempotency key
-- (UNIQUE (node_id, tenant_id, idempotency_key)); the caller reads it
-- instead.
INSERT INTO node_commands (id, tenant_id, identity, node_id, allocation_id, idempotency_key, kind, retry_safe,
                           payload, min_generation, state, instance_id, generation)
VALUES (sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(identity), sqlc.arg(node_id), sqlc.narg(allocation_id),
        sqlc.arg(idempotency_key), sqlc.arg(kind), sqlc.arg(retry_safe), sqlc.arg(payload),
        sqlc.arg(min_generation), 'queued', sqlc.narg(instance_id), sqlc.narg(generation))
ON CONFLICT (node_id, tenant_id, idempotency_key) DO NOTHING
RETURNING *;

-- name: NodeCommandInsertAt :one
-- NodeCommandInsert with created_at given: a command queued in the batch
-- that also appends its event, whose data carries the creation time.
INSERT INTO node_commands (id, tenant_id, identity, node_id, allocation_id, idempotency_key, kind, retry_safe,
                           payload, min_generation, state, instance_id, generation, created_at)
VALUES (sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(identity), sqlc.arg(node_id), sqlc.narg(allocation_id),
        sqlc.arg(idempotency_key), sqlc.arg(kind), sqlc.arg(retry_safe), sqlc.arg(payload),
        sqlc.arg(min_generation), 'queued', sqlc.narg(instance_id), sqlc.narg(generation), sqlc.arg(created_at))
ON CONFLICT (node_id, tenant_id, idempotency_key) DO NOTHING
RETURNING *;

-- name: NodeCommandInsertNew :one
-- NodeCommandInsertAt for a job whose key cannot be taken unless something
-- raced it: a taken key is a unique violation, which aborts the
-- transaction, so the batch that queues the job may also commit it
-- (pg.Batch.Commit) with no check left for Go to make.
INSERT INTO node_commands (id, tenant_id, identity, node_id, allocation_id, idempotency_key, kind, retry_safe,
                           payload, min_generation, state, instance_id, generation, created_at)
VALUES (sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(identity), sqlc.arg(node_id), sqlc.narg(allocation_id),
        sqlc.arg(idempotency_key), sqlc.arg(kind), sqlc.arg(retry_safe), sqlc.arg(payload),
        sqlc.arg(min_generation), 'queued', sqlc.narg(instance_id), sqlc.narg(generation), sqlc.arg(created_at))
RETURNING *;

-- name: NodeCommandGet :one
SELECT * FROM node_commands WHERE id = sqlc.arg(id);

-- name: NodeCommandGetByKey :one
SELECT * FROM node_commands
 WHERE node_id = sqlc.arg(node_id) AND tenant_id = sqlc.arg(tenant_id) AND idempotency_key = sqlc.arg(idempotency_key);

-- name: NodeCommandGetForUpdate :one
SELECT * FROM node_commands WHERE id = sqlc.arg(id) FOR UPDATE;

-- name: NodeCommandListOpenForUpdate :many
-- The node's queued and in-flight commands, in the order they were queued
-- (seq), locked for the dispatching transaction (which already holds the
-- session row FOR SHARE).
SELECT * FROM node_commands
 WHERE node_id = sqlc.arg(node_id) AND state IN ('queued', 'sent', 'running')
 ORDER BY seq
   FOR UPDATE;

-- name: NodeCommandMarkSent :execrows
-- A (re)send at the session epoch to the daemon's journal. state stays as
-- it is for a re-send of a command already in flight. An assign is marked
-- only on a session whose daemon's inventory was reconciled at that epoch
-- (node_sessions.inventory_reconciled_epoch): before, the daemon may hold
-- an allocation nobody here knows on its devices, whose unassign is not
-- queued yet. Zero rows: the version moved, or such an assign.
UPDATE node_commands c
   SET state = sqlc.arg(state), dispatched_epoch = sqlc.arg(dispatched_epoch)::bigint,
       journal_id = sqlc.arg(journal_id)::text, dispatched_at = compute_now(), version = c.version + sqlc.arg(bump)::bigint
 WHERE c.id = sqlc.arg(id) AND c.version = sqlc.arg(version)
   AND (c.kind <> 'assign'
        OR EXISTS (SELECT 1 FROM node_sessions s
                    WHERE s.node_id = c.node_id AND s.session_epoch = sqlc.arg(dispatched_epoch)::bigint
                      AND s.inventory_reconciled_epoch = s.session_epoch));

-- name: NodeCommandFinish :execrows
-- A result from the daemon (running, succeeded, failed) or the control
-- plane's verdict (failed after the daemon lost its journal). finished_at
-- is set for terminal states only.
UPDATE node_commands
   SET state = sqlc.arg(state), exit_code = sqlc.narg(exit_code), output = sqlc.arg(output),
       reason = sqlc.arg(reason), version = version + 1,
       finished_at = CASE WHEN sqlc.arg(terminal)::boolean THEN compute_now() END
 WHERE id = sqlc.arg(id) AND version = sqlc.arg(version);

-- name: NodeCommandTenantAllocations :many
-- The tenant's live allocations on node with the state of their
-- reservation: a tenant may run a node job only inside an allocation of its
-- own whose reservation is active (its window has begun), never on a
-- booking that starts later. The reservations are locked FOR SHARE until
-- the job is written, so none ends (or is released) in between.
SELECT a.id AS allocation_id, (r.state = 'active' AND r.during @> compute_now())::boolean AS usable,
       r.id AS reservation_id, r.state, lower(r.during)::timestamptz AS start_ts
  FROM allocations a JOIN reservations r ON r.id = a.reservation_id
 WHERE a.node_id = sqlc.arg(node_id) AND a.released_at IS NULL AND r.tenant_id = sqlc.arg(tenant_id)
   AND r.state IN ('booked', 'active')
 ORDER BY a.id
   FOR SHARE OF r;

-- name: NodeCommandNodesToDispatch :many
-- The nodes with a session at this gateway that have a command to send: a
-- queued one whose min_generation the node has applied (as
-- NodeAppliedGeneration), or one in flight that was sent at another epoch
-- or to another journal. An assign counts only once the session's
-- inventory was reconciled (NodeCommandMarkSent sends none before).
SELECT DISTINCT c.node_id FROM node_commands c JOIN node_sessions s ON s.node_id = c.node_id
  LEFT JOIN node_desired d ON d.node_id = c.node_id
  LEFT JOIN LATERAL (SELECT min(o.generation) AS generation FROM node_commands o
                      WHERE o.node_id = c.node_id AND o.kind IN ('assign', 'unassign')
                        AND o.state IN ('queued', 'sent', 'running')) oa ON true
 WHERE s.connected AND s.gateway_id = sqlc.arg(gateway_id)::text
   AND (c.kind <> 'assign' OR s.inventory_reconciled_epoch = s.session_epoch)
   AND ((c.state = 'queued'
         AND c.min_generation <= LEAST(coalesce(d.generation, 0), coalesce(oa.generation - 1, d.generation, 0)))
     OR (c.state IN ('sent', 'running')
         AND (c.dispatched_epoch IS DISTINCT FROM s.session_epoch OR c.journal_id IS DISTINCT FROM s.journal_id)))
 ORDER BY c.node_id;

-- name: NodeCommandLockTenantNode :exec
-- Serialises the queuing of one tenant's jobs on one node for the rest of
-- the transaction, so that the cap on open jobs (NodeCommandCountOpen) is
-- exact under concurrent requests. A transaction-scoped advisory lock: it
-- ends with the transaction, so it is safe under PgBouncer's transaction
-- pooling (unlike the session-level kind leases avoid), and it touches no
-- row that placement or release lock.
SELECT pg_advisory_xact_lock(hashtextextended('node-jobs:' || sqlc.arg(tenant_id)::text || ':' || sqlc.arg(node_id)::text, 0));

-- name: NodeCommandCountOpen :one
-- How many of a tenant's commands.run jobs (exec, wipe, deploy) on a node
-- are not finished (queued, sent or running): commands.run refuses one more
-- past Handlers.MaxOpenNodeJobs. The control plane's own jobs (assign,
-- unassign, instance-start, instance-stop) do not count.
SELECT count(*) FROM node_commands
 WHERE node_id = sqlc.arg(node_id) AND tenant_id = sqlc.arg(tenant_id) AND state IN ('queued', 'sent', 'running')
   AND kind IN ('exec', 'wipe', 'deploy');

-- name: NodeJobTimeoutDue :many
-- Nodes with a job that is not an assignment still queued, sent or
-- running, that no daemon can answer any more: the node has been
-- unreachable or lost for at least after_seconds (unreachable_since is
-- kept while it is lost) of the control plane's uptime, or it was retired
-- (its credentials are revoked). The absence counts from the later of
-- unreachable_since and the end of the last control-plane outage, as in
-- NodeJobTimeoutAbsence, which the sweep asks again under the node's lock
-- (node_absence_counted_from, migration 0074).
-- The liveness sweep times those jobs out (commands/node_job_timeout.go).
-- The node_commands_open index finds the open jobs of each node.
SELECT n.id FROM nodes n
  LEFT JOIN node_sessions s ON s.node_id = n.id
  LEFT JOIN LATERAL node_absence_counted_from(s.unreachable_since) a ON true
 WHERE (n.state = 'retired'
        OR (n.state IN ('unreachable', 'lost') AND s.unreachable_since IS NOT NULL
            AND a.counted_from + make_interval(secs => sqlc.arg(after_seconds)::float8) <= compute_now()))
   AND EXISTS (SELECT 1 FROM node_commands j
                WHERE j.node_id = n.id AND j.state IN ('queued', 'sent', 'running')
                  AND j.kind NOT IN ('assign', 'unassign'))
 ORDER BY n.id;

-- name: NodeJobTimeoutAbsence :one
-- How long node's absence counts for the node job timeout, judged by the
-- database's clock: from the later of unreachable_since and the end of the
-- last control-plane outage (node_liveness_sweeps.outage_ended_at), since a
-- daemon cannot reconnect while the control plane is down; due once that is
-- at least after_seconds ago (node_absence_counted_from, migration 0074).
-- No row: the node has no unreachable_since.
SELECT s.unreachable_since::timestamptz AS unreachable_since,
       a.counted_from::timestamptz AS counted_from,
       (a.counted_from + make_interval(secs => sqlc.arg(after_seconds)::float8) <= compute_now())::bool AS due
  FROM node_sessions s
  CROSS JOIN LATERAL node_absence_counted_from(s.unreachable_since) a
 WHERE s.node_id = sqlc.arg(node_id) AND s.unreachable_since IS NOT NULL;

-- name: NodeCommandTimeOut :execrows
-- Times a job out: guarded by its version and by the states a job can be
-- timed out from, and never an assign or unassign, whose fencing and
-- release path rely on them concluding on the node (docs/concepts/nodes.md).
-- Zero rows: the job moved meanwhile.
UPDATE node_commands
   SET state = 'timed-out', reason = sqlc.arg(reason), version = version + 1, finished_at = compute_now()
 WHERE id = sqlc.arg(id) AND version = sqlc.arg(version)
   AND state IN ('queued', 'sent', 'running') AND kind NOT IN ('assign', 'unassign');
