-- name: NodeResourceCreate :exec
INSERT INTO node_resources (node_id, resource, allocatable, ratio)
VALUES (sqlc.arg(node_id), sqlc.arg(resource), sqlc.arg(allocatable), sqlc.arg(ratio)::float8);

-- name: NodeResourceCharge :execrows
-- Rule 3: a guarded counter update. Zero rows means the node has no room;
-- the placer replans without it. The CHECK constraint is the backstop. A
-- pending shrink (pending_allocatable) bounds new bookings as if adopted:
-- least() ignores its NULL.
UPDATE node_resources SET allocated = allocated + sqlc.arg(amount)::bigint
 WHERE node_id = sqlc.arg(node_id) AND resource = sqlc.arg(resource)
   AND allocated + sqlc.arg(amount)::bigint <= floor(least(allocatable, pending_allocatable) * ratio);

-- name: NodeResourceRefund :execrows
UPDATE node_resources SET allocated = allocated - sqlc.arg(amount)::bigint
 WHERE node_id = sqlc.arg(node_id) AND resource = sqlc.arg(resource)
   AND allocated - sqlc.arg(amount)::bigint >= 0;

-- name: NodeResourceListByNode :many
SELECT node_id, resource, allocatable, ratio::float8 AS ratio, allocated,
       floor(allocatable * ratio)::bigint AS capacity
  FROM node_resources WHERE node_id = sqlc.arg(node_id) ORDER BY resource;

-- name: NodeResourceChargeMany :many
-- Rule 3 for every scalar of a request in one statement: each counter is
-- charged only if it stays within floor(allocatable * ratio); the
-- resources charged are returned, and fewer than asked means the node has
-- no room (the placer rolls back to its savepoint and replans). The rows
-- are locked in resource order first, as the statements one by one did.
-- While a shrink the daemon reported waits for the node's bookings to fit
-- it (pending_allocatable), new bookings are held to the smaller value, so
-- that they cannot keep it from ever fitting (least() ignores a NULL).
WITH locked AS MATERIALIZED (
  SELECT r.node_id, r.resource FROM node_resources r
   WHERE r.node_id = sqlc.arg(node_id) AND r.resource = ANY(sqlc.arg(resources)::text[])
   ORDER BY r.resource FOR UPDATE
)
UPDATE node_resources r SET allocated = r.allocated + c.amount
  FROM locked l, (SELECT unnest(sqlc.arg(resources)::text[]) AS resource,
               unnest(sqlc.arg(amounts)::bigint[]) AS amount) AS c
 WHERE r.node_id = l.node_id AND r.resource = l.resource AND c.resource = l.resource
   AND r.allocated + c.amount <= floor(least(r.allocatable, r.pending_allocatable) * r.ratio)
RETURNING r.resource;

-- name: NodeResourceRefundMany :many
-- Gives a released allocation's scalars back in one statement, locking in
-- resource order like NodeResourceChargeMany. A resource missing from the
-- result had less allocated than the refund: the caller fails.
WITH locked AS MATERIALIZED (
  SELECT r.node_id, r.resource FROM node_resources r
   WHERE r.node_id = sqlc.arg(node_id) AND r.resource = ANY(sqlc.arg(resources)::text[])
   ORDER BY r.resource FOR UPDATE
)
UPDATE node_resources r SET allocated = r.allocated - c.amount
  FROM locked l, (SELECT unnest(sqlc.arg(resources)::text[]) AS resource,
               unnest(sqlc.arg(amounts)::bigint[]) AS amount) AS c
 WHERE r.node_id = l.node_id AND r.resource = l.resource AND c.resource = l.resource
   AND r.allocated - c.amount >= 0
RETURNING r.resource;

-- name: NodeResourceListForUpdate :many
-- A node's counters locked in resource order (the lock order), for the
-- inventory reconcile to compare the daemon's scalars with, and for the
-- resync to retry the pending shrinks (and restate the values out of
-- range that the last report stated).
SELECT resource, allocatable, ratio::float8 AS ratio, allocated,
       floor(allocatable * ratio)::bigint AS capacity, pending_allocatable, reported_out_of_range
  FROM node_resources WHERE node_id = sqlc.arg(node_id)
 ORDER BY resource FOR UPDATE;

-- name: NodeResourceSetAllocatable :one
-- Rule 3 when a node's allocatable changes (its daemon reports another
-- --vcpu, --memory-mb or --disk-gb): guarded, so that every live and
-- future booking on the node still fits the new capacity. No row means
-- they would not (the record stays); the row returns the new capacity,
-- which the pool rollup moves by. The CHECK is the backstop. Adopting a
-- value ends any shrink that was pending, and any value out of range the
-- daemon stated before. The node's resync adopts a pending shrink with
-- this same statement once the bookings fit it.
UPDATE node_resources SET allocatable = sqlc.arg(allocatable)::bigint, pending_allocatable = NULL,
       reported_out_of_range = NULL
 WHERE node_id = sqlc.arg(node_id) AND resource = sqlc.arg(resource)
   AND allocated <= floor(sqlc.arg(allocatable)::bigint * ratio)
RETURNING floor(allocatable * ratio)::bigint AS capacity;

-- name: NodeResourceSetRefused :exec
-- Remembers what a daemon's report stated that was not adopted, on a row
-- NodeResourceListForUpdate locked: the shrink that the node's bookings do
-- not fit yet (pending_allocatable) and the value out of range
-- (reported_out_of_range); NULL: none. The CHECKs
-- node_resources_pending_is_a_shrink and
-- node_resources_reported_is_out_of_range refuse anything else.
UPDATE node_resources SET pending_allocatable = sqlc.narg(pending_allocatable)::bigint,
       reported_out_of_range = sqlc.narg(reported_out_of_range)::bigint
 WHERE node_id = sqlc.arg(node_id) AND resource = sqlc.arg(resource);

-- name: NodeResourceClearRefused :execrows
-- Forgets a node's pending shrinks and values out of range: its daemon
-- reported no scalars, so it no longer states any (the ScalarsMismatch
-- condition clears with them). Locks only the rows that had one; the
-- count says whether any had.
UPDATE node_resources SET pending_allocatable = NULL, reported_out_of_range = NULL
 WHERE node_id = sqlc.arg(node_id) AND (pending_allocatable IS NOT NULL OR reported_out_of_range IS NOT NULL);

-- name: NodeResourcePendingFits :one
-- Whether a shrink pending on the node now fits its bookings: the resync's
-- look, without locks, before it takes the node's rows to adopt it.
SELECT EXISTS (SELECT 1 FROM node_resources
                WHERE node_id = sqlc.arg(node_id) AND pending_allocatable IS NOT NULL
                  AND allocated <= floor(pending_allocatable * ratio))::boolean AS fits;
