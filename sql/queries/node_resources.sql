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
