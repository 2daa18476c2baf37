-- name: RmFleetNodeRegister :execrows
-- A node.registered event creates the node at version 1; a replay changes
-- nothing.
INSERT INTO rm_fleet_nodes (id, pool_id, cordoned, taints, vcpu, memory_mb, disk_gb, version,
       registered_at, updated_at, updated_txid, updated_seq)
VALUES (sqlc.arg(id), sqlc.arg(pool_id), sqlc.arg(cordoned), sqlc.arg(taints)::text[], sqlc.arg(vcpu),
        sqlc.arg(memory_mb), sqlc.arg(disk_gb), sqlc.arg(version), sqlc.arg(at)::timestamptz,
        sqlc.arg(at)::timestamptz, sqlc.arg(txid)::xid8, sqlc.arg(seq)::bigint)
ON CONFLICT (id) DO NOTHING;

-- name: RmFleetNodeUpdateScheduling :execrows
-- Cordon, uncordon, taint and untaint events: applied only when newer.
UPDATE rm_fleet_nodes
   SET cordoned = sqlc.arg(cordoned), taints = sqlc.arg(taints)::text[], version = sqlc.arg(version),
       updated_at = sqlc.arg(at)::timestamptz, updated_txid = sqlc.arg(txid)::xid8, updated_seq = sqlc.arg(seq)::bigint
 WHERE id = sqlc.arg(id) AND version < sqlc.arg(version);

-- name: RmFleetNodeGet :one
-- A node with its capacity (allocatable scaled by its pool's ratios) and
-- utilization (the sum of its live allocations).
SELECT n.id, n.pool_id, n.cordoned, n.taints, n.vcpu, n.memory_mb, n.disk_gb, n.version,
       n.registered_at, n.updated_at,
       floor(n.vcpu * coalesce(p.cpu_ratio, 1))::bigint AS vcpu_capacity,
       floor(n.memory_mb * coalesce(p.memory_ratio, 1))::bigint AS memory_capacity,
       floor(n.disk_gb * coalesce(p.disk_ratio, 1))::bigint AS disk_capacity,
       coalesce(a.vcpu, 0)::bigint AS vcpu_allocated,
       coalesce(a.memory_mb, 0)::bigint AS memory_allocated,
       coalesce(a.disk_gb, 0)::bigint AS disk_allocated,
       coalesce(a.reservations, 0)::bigint AS live_reservations
  FROM rm_fleet_nodes n
  LEFT JOIN rm_fleet_pools p ON p.id = n.pool_id
  LEFT JOIN LATERAL (SELECT sum(x.vcpu) AS vcpu, sum(x.memory_mb) AS memory_mb, sum(x.disk_gb) AS disk_gb,
                            count(*) AS reservations
                       FROM rm_fleet_allocations x WHERE x.node_id = n.id AND x.live) a ON true
 WHERE n.id = sqlc.arg(id);

-- name: RmFleetNodeList :many
-- A keyset page of nodes in id order, optionally of one pool.
SELECT n.id, n.pool_id, n.cordoned, n.taints, n.vcpu, n.memory_mb, n.disk_gb, n.version,
       n.registered_at, n.updated_at,
       floor(n.vcpu * coalesce(p.cpu_ratio, 1))::bigint AS vcpu_capacity,
       floor(n.memory_mb * coalesce(p.memory_ratio, 1))::bigint AS memory_capacity,
       floor(n.disk_gb * coalesce(p.disk_ratio, 1))::bigint AS disk_capacity,
       coalesce(a.vcpu, 0)::bigint AS vcpu_allocated,
       coalesce(a.memory_mb, 0)::bigint AS memory_allocated,
       coalesce(a.disk_gb, 0)::bigint AS disk_allocated,
       coalesce(a.reservations, 0)::bigint AS live_reservations
  FROM rm_fleet_nodes n
  LEFT JOIN rm_fleet_pools p ON p.id = n.pool_id
  LEFT JOIN LATERAL (SELECT sum(x.vcpu) AS vcpu, sum(x.memory_mb) AS memory_mb, sum(x.disk_gb) AS disk_gb,
                            count(*) AS reservations
                       FROM rm_fleet_allocations x WHERE x.node_id = n.id AND x.live) a ON true
 WHERE (sqlc.narg(pool_id)::text IS NULL OR n.pool_id = sqlc.narg(pool_id)::text)
   AND n.id > sqlc.arg(after_id)::text
 ORDER BY n.id
 LIMIT sqlc.arg(max_rows);

-- name: RmFleetNodeListAll :many
SELECT id, pool_id, cordoned, taints, vcpu, memory_mb, disk_gb, version, registered_at, updated_at,
       updated_txid, updated_seq
  FROM rm_fleet_nodes ORDER BY id;
