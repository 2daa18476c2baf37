-- name: PoolCreate :one
INSERT INTO pools (id, site_id, kind, lost_after_seconds, cpu_ratio, memory_ratio, disk_ratio, workload_network)
VALUES (sqlc.arg(id), sqlc.arg(site_id), sqlc.arg(kind), sqlc.narg(lost_after_seconds),
        sqlc.arg(cpu_ratio)::float8, sqlc.arg(memory_ratio)::float8, sqlc.arg(disk_ratio)::float8,
        sqlc.arg(workload_network))
RETURNING id, site_id, kind, lost_after_seconds, cpu_ratio::float8 AS cpu_ratio,
          memory_ratio::float8 AS memory_ratio, disk_ratio::float8 AS disk_ratio, workload_network, version, created_at;

-- name: PoolGet :one
SELECT id, site_id, kind, lost_after_seconds, cpu_ratio::float8 AS cpu_ratio,
       memory_ratio::float8 AS memory_ratio, disk_ratio::float8 AS disk_ratio, workload_network, version, created_at
  FROM pools WHERE id = sqlc.arg(id);

-- name: PoolLockShare :one
-- Taken by nodes.register so that a pool's ratios cannot change under it.
SELECT id, version FROM pools WHERE id = sqlc.arg(id) FOR SHARE;

-- name: ReservationPlacementScope :one
-- What a create reads before it places, sent with its first statements in
-- one round trip: the business time (compute_now(), instead of a clock read
-- of its own) and whether the named pool or site exists.
SELECT compute_now()::timestamptz AS now,
       EXISTS (SELECT 1 FROM pools WHERE id = sqlc.narg(pool_id)::text) AS pool_found,
       EXISTS (SELECT 1 FROM sites WHERE id = sqlc.narg(site_id)::text) AS site_found;
