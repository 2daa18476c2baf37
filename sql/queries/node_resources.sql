-- name: NodeResourceCreate :exec
INSERT INTO node_resources (node_id, resource, allocatable, ratio)
VALUES (sqlc.arg(node_id), sqlc.arg(resource), sqlc.arg(allocatable), sqlc.arg(ratio)::float8);

-- name: NodeResourceCharge :execrows
-- Rule 3: a guarded counter update. Zero rows means the node has no room;
-- the placer replans without it. The CHECK constraint is the backstop.
UPDATE node_resources SET allocated = allocated + sqlc.arg(amount)::bigint
 WHERE node_id = sqlc.arg(node_id) AND resource = sqlc.arg(resource)
   AND allocated + sqlc.arg(amount)::bigint <= floor(allocatable * ratio);

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
WITH locked AS MATERIALIZED (
  SELECT r.node_id, r.resource FROM node_resources r
   WHERE r.node_id = sqlc.arg(node_id) AND r.resource = ANY(sqlc.arg(resources)::text[])
   ORDER BY r.resource FOR UPDATE
)
UPDATE node_resources r SET allocated = r.allocated + c.amount
  FROM locked l, (SELECT unnest(sqlc.arg(resources)::text[]) AS resource,
               unnest(sqlc.arg(amounts)::bigint[]) AS amount) AS c
 WHERE r.node_id = l.node_id AND r.resource = l.resource AND c.resource = l.resource
   AND r.allocated + c.amount <= floor(r.allocatable * r.ratio)
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
-- inventory reconcile to compare the daemon's scalars with.
SELECT resource, allocatable, ratio::float8 AS ratio, allocated,
       floor(allocatable * ratio)::bigint AS capacity
  FROM node_resources WHERE node_id = sqlc.arg(node_id)
 ORDER BY resource FOR UPDATE;

-- name: NodeResourceSetAllocatable :one
-- Rule 3 when a node's allocatable changes (its daemon reports another
-- --vcpu, --memory-mb or --disk-gb): guarded, so that every live and
-- future booking on the node still fits the new capacity. No row means
-- they would not (the record stays); the row returns the new capacity,
-- which the pool rollup moves by. The CHECK is the backstop.
UPDATE node_resources SET allocatable = sqlc.arg(allocatable)::bigint
 WHERE node_id = sqlc.arg(node_id) AND resource = sqlc.arg(resource)
   AND allocated <= floor(sqlc.arg(allocatable)::bigint * ratio)
RETURNING floor(allocatable * ratio)::bigint AS capacity;
