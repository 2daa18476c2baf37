-- name: RmFleetPoolApply :execrows
-- Writes a pool from its pool.created event; older versions change nothing.
INSERT INTO rm_fleet_pools AS p (id, site_id, kind, cpu_ratio, memory_ratio, disk_ratio, workload_network, version)
VALUES (sqlc.arg(id), sqlc.arg(site_id), sqlc.arg(kind), sqlc.arg(cpu_ratio)::float8, sqlc.arg(memory_ratio)::float8,
        sqlc.arg(disk_ratio)::float8, sqlc.arg(workload_network), sqlc.arg(version))
ON CONFLICT (id) DO UPDATE
   SET site_id = EXCLUDED.site_id, kind = EXCLUDED.kind, cpu_ratio = EXCLUDED.cpu_ratio,
       memory_ratio = EXCLUDED.memory_ratio, disk_ratio = EXCLUDED.disk_ratio,
       workload_network = EXCLUDED.workload_network, version = EXCLUDED.version
 WHERE p.version < EXCLUDED.version;

-- name: RmFleetPoolCapacity :one
-- A pool's scalar capacity (sum over its nodes of floor(allocatable * ratio),
-- as pool_capacity_rollup computes it) and what live allocations hold.
-- Retired nodes are left out: retirement is terminal and a node holding
-- live allocations cannot retire, so what one offered is gone for good.
-- (The write model's rollup keeps their capacity: it is a ceiling for the
-- guarded charges, which the placer never makes on a retired node.) Nodes
-- that are only cordoned, draining, unreachable or lost still belong to
-- the pool and may take work again, so they count.
SELECT p.id, p.site_id, p.kind, p.version,
       count(n.id)::bigint AS nodes,
       (count(n.id) FILTER (WHERE n.cordoned))::bigint AS cordoned_nodes,
       coalesce(sum(floor(n.vcpu * p.cpu_ratio)), 0)::bigint AS vcpu_capacity,
       coalesce(sum(floor(n.memory_mb * p.memory_ratio)), 0)::bigint AS memory_capacity,
       coalesce(sum(floor(n.disk_gb * p.disk_ratio)), 0)::bigint AS disk_capacity,
       (SELECT coalesce(sum(a.vcpu), 0) FROM rm_fleet_allocations a WHERE a.pool_id = p.id AND a.live)::bigint AS vcpu_allocated,
       (SELECT coalesce(sum(a.memory_mb), 0) FROM rm_fleet_allocations a WHERE a.pool_id = p.id AND a.live)::bigint AS memory_allocated,
       (SELECT coalesce(sum(a.disk_gb), 0) FROM rm_fleet_allocations a WHERE a.pool_id = p.id AND a.live)::bigint AS disk_allocated
  FROM rm_fleet_pools p
  LEFT JOIN rm_fleet_nodes n ON n.pool_id = p.id AND n.state <> 'retired'
 WHERE p.id = sqlc.arg(id)
 GROUP BY p.id;

-- name: RmFleetPoolListAll :many
SELECT id, site_id, kind, cpu_ratio::float8 AS cpu_ratio, memory_ratio::float8 AS memory_ratio,
       disk_ratio::float8 AS disk_ratio, workload_network, version
  FROM rm_fleet_pools ORDER BY id;

-- name: RmFleetPoolSeed :exec
-- A rebuild starts from the write model (projections.Seeder): every pool
-- as its pool.created event wrote it (pools never change after), the
-- ratios through float8 as the event carries them. The replay after it
-- then changes nothing that the write model already shows.
INSERT INTO rm_fleet_pools (id, site_id, kind, cpu_ratio, memory_ratio, disk_ratio, workload_network, version)
SELECT p.id, p.site_id, p.kind, p.cpu_ratio::float8, p.memory_ratio::float8, p.disk_ratio::float8,
       p.workload_network, p.version
  FROM pools p;
