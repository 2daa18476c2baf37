-- name: PoolCapacityRollupAddNode :exec
-- Adds a registered node's capacity to its pool's rollup rows, computed by
-- the same floor(allocatable * ratio) as the node's own guard.
INSERT INTO pool_capacity_rollup AS pr (pool_id, resource, capacity)
SELECT n.pool_id, r.resource, floor(r.allocatable * r.ratio)::bigint
  FROM node_resources r JOIN nodes n ON n.id = r.node_id
 WHERE r.node_id = sqlc.arg(node_id)
 ORDER BY r.resource
ON CONFLICT (pool_id, resource) DO UPDATE SET capacity = pr.capacity + EXCLUDED.capacity;

-- name: PoolCapacityRollupAdjust :execrows
-- Moves a pool's allocated total by delta (negative to free); guarded, so
-- zero rows means the rollup would leave [0, capacity].
UPDATE pool_capacity_rollup SET allocated = allocated + sqlc.arg(delta)::bigint
 WHERE pool_id = sqlc.arg(pool_id) AND resource = sqlc.arg(resource)
   AND allocated + sqlc.arg(delta)::bigint BETWEEN 0 AND capacity;

-- name: PoolCapacityRollupList :many
SELECT pool_id, resource, capacity, allocated FROM pool_capacity_rollup
 WHERE pool_id = sqlc.arg(pool_id) ORDER BY resource;

-- name: PoolCapacityRollupAdjustMany :many
-- PoolCapacityRollupAdjust for every scalar in one statement, locking in
-- resource order; a resource missing from the result would have left
-- [0, capacity] (the rollup disagrees with the node counters).
WITH locked AS MATERIALIZED (
  SELECT p.pool_id, p.resource FROM pool_capacity_rollup p
   WHERE p.pool_id = sqlc.arg(pool_id) AND p.resource = ANY(sqlc.arg(resources)::text[])
   ORDER BY p.resource FOR UPDATE
)
UPDATE pool_capacity_rollup p SET allocated = p.allocated + c.delta
  FROM locked l, (SELECT unnest(sqlc.arg(resources)::text[]) AS resource,
               unnest(sqlc.arg(deltas)::bigint[]) AS delta) AS c
 WHERE p.pool_id = l.pool_id AND p.resource = l.resource AND c.resource = l.resource
   AND p.allocated + c.delta BETWEEN 0 AND p.capacity
RETURNING p.resource;

-- name: PoolCapacityRollupMoveCapacity :execrows
-- Moves a pool's capacity by a node's change of capacity (its allocatable
-- changed); guarded, so zero rows means the pool would hold more than its
-- capacity (the rollup disagrees with the node counters).
UPDATE pool_capacity_rollup SET capacity = capacity + sqlc.arg(delta)::bigint
 WHERE pool_id = sqlc.arg(pool_id) AND resource = sqlc.arg(resource)
   AND capacity + sqlc.arg(delta)::bigint >= allocated;
