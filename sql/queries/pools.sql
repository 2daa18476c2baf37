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
-- of its own), whether the named pool or site exists, and the priority
-- class it asks for (the default one when class_name is NULL) with whether
-- its tenant may use it: the default class always, any other when the
-- tenant's allow-list names it. class_found is false when there is no such
-- class (or no default). may_preempt says whether any preemptible class has
-- a lower value: only then may a reservation of this class that does not
-- fit look for victims.
SELECT compute_now()::timestamptz AS now,
       EXISTS (SELECT 1 FROM pools WHERE id = sqlc.narg(pool_id)::text) AS pool_found,
       EXISTS (SELECT 1 FROM sites WHERE id = sqlc.narg(site_id)::text) AS site_found,
       (pc.name IS NOT NULL)::boolean AS class_found,
       coalesce(pc.name, '')::text AS class_name, coalesce(pc.value, 0)::int AS class_value,
       coalesce(pc.preemptible, false)::boolean AS class_preemptible,
       coalesce(pc.is_default OR EXISTS (SELECT 1 FROM tenant_priority_classes t
                                          WHERE t.tenant_id = sqlc.arg(tenant_id)::text AND t.class = pc.name),
                false)::boolean AS class_allowed,
       coalesce(EXISTS (SELECT 1 FROM priority_classes o WHERE o.preemptible AND o.value < pc.value), false)::boolean
         AS class_may_preempt
  FROM (SELECT 1) AS one
  LEFT JOIN priority_classes pc
    ON CASE WHEN sqlc.narg(class_name)::text IS NULL THEN pc.is_default ELSE pc.name = sqlc.narg(class_name)::text END;
