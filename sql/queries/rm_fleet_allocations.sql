-- name: RmFleetAllocationApply :execrows
-- What a placed reservation holds, from any of its events; live while it is
-- booked or active. Older versions change nothing.
INSERT INTO rm_fleet_allocations AS a (reservation_id, tenant_id, node_id, pool_id, device_ids, vcpu, memory_mb,
       disk_gb, live, version)
VALUES (sqlc.arg(reservation_id), sqlc.arg(tenant_id), sqlc.arg(node_id), sqlc.arg(pool_id),
        sqlc.arg(device_ids)::text[], sqlc.arg(vcpu), sqlc.arg(memory_mb), sqlc.arg(disk_gb), sqlc.arg(live),
        sqlc.arg(version))
ON CONFLICT (reservation_id) DO UPDATE
   SET node_id = EXCLUDED.node_id, pool_id = EXCLUDED.pool_id, device_ids = EXCLUDED.device_ids,
       vcpu = EXCLUDED.vcpu, memory_mb = EXCLUDED.memory_mb, disk_gb = EXCLUDED.disk_gb,
       live = EXCLUDED.live, version = EXCLUDED.version
 WHERE a.version < EXCLUDED.version;

-- name: RmFleetAllocationScalarsOf :one
-- The scalars a reservation asked for, from its immutable spec in the write
-- model: reservation events do not carry them yet. The spec never changes
-- after creation, so a replay reads the same values.
SELECT coalesce((spec->>'vcpu')::bigint, 0)::bigint AS vcpu,
       coalesce((spec->>'memoryMb')::bigint, 0)::bigint AS memory_mb,
       coalesce((spec->>'diskGb')::bigint, 0)::bigint AS disk_gb
  FROM reservations WHERE id = sqlc.arg(id);

-- name: RmFleetAllocationListAll :many
SELECT reservation_id, tenant_id, node_id, pool_id, device_ids, vcpu, memory_mb, disk_gb, live, version
  FROM rm_fleet_allocations ORDER BY reservation_id;

-- name: RmFleetAllocationSeed :exec
-- A rebuild starts from the write model (projections.Seeder): what every
-- placed reservation holds (a reservation has at most one allocation), at
-- the reservation's version, as its events write it: the node's pool, the
-- scalars of its request, live while booked or active. A reservation that
-- ended and has no event left in the log gets no row, as retention deletes
-- it from the live model (RetentionFleetAllocationsPrune): nothing can be
-- replayed over it.
INSERT INTO rm_fleet_allocations (reservation_id, tenant_id, node_id, pool_id, device_ids, vcpu, memory_mb,
       disk_gb, live, version)
SELECT r.id, r.tenant_id, a.node_id, n.pool_id, a.device_ids,
       coalesce((r.spec->>'vcpu')::bigint, 0), coalesce((r.spec->>'memoryMb')::bigint, 0),
       coalesce((r.spec->>'diskGb')::bigint, 0), r.state IN ('booked', 'active'), r.version
  FROM allocations a
  JOIN reservations r ON r.id = a.reservation_id
  JOIN nodes n ON n.id = a.node_id
 WHERE r.state IN ('booked', 'active')
    OR EXISTS (SELECT 1 FROM outbox o WHERE o.subject = 'reservations/' || r.id);
