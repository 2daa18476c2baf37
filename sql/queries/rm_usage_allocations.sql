-- name: RmUsageAllocationBook :execrows
-- A reservation was placed: its reserved interval starts at the later of
-- its start and the moment it was booked. Older versions change nothing.
INSERT INTO rm_usage_allocations AS u (reservation_id, allocation_id, tenant_id, pool_id, node_id, devices, vcpu,
       memory_mb, disk_gb, start_ts, end_ts, final, version, gpu_kind, gpu_model, mig_profile, slot_kind)
VALUES (sqlc.arg(reservation_id), sqlc.arg(allocation_id), sqlc.arg(tenant_id), sqlc.arg(pool_id), sqlc.arg(node_id),
        sqlc.arg(devices), sqlc.arg(vcpu), sqlc.arg(memory_mb), sqlc.arg(disk_gb),
        greatest(sqlc.arg(start_ts)::timestamptz, sqlc.arg(at)::timestamptz),
        greatest(sqlc.arg(start_ts)::timestamptz, sqlc.arg(at)::timestamptz, sqlc.arg(end_ts)::timestamptz),
        false, sqlc.arg(version), sqlc.arg(gpu_kind), sqlc.arg(gpu_model), sqlc.arg(mig_profile), sqlc.arg(slot_kind))
ON CONFLICT (reservation_id) DO UPDATE
   SET allocation_id = EXCLUDED.allocation_id, pool_id = EXCLUDED.pool_id, node_id = EXCLUDED.node_id,
       devices = EXCLUDED.devices, vcpu = EXCLUDED.vcpu, memory_mb = EXCLUDED.memory_mb, disk_gb = EXCLUDED.disk_gb,
       start_ts = EXCLUDED.start_ts, end_ts = EXCLUDED.end_ts, final = false, version = EXCLUDED.version,
       gpu_kind = EXCLUDED.gpu_kind, gpu_model = EXCLUDED.gpu_model, mig_profile = EXCLUDED.mig_profile,
       slot_kind = EXCLUDED.slot_kind
 WHERE u.version < EXCLUDED.version;

-- name: RmUsageAllocationSetEnd :execrows
-- A live reservation's new end (extension, activation), only when newer.
UPDATE rm_usage_allocations
   SET end_ts = greatest(start_ts, sqlc.arg(end_ts)::timestamptz), version = sqlc.arg(version)
 WHERE reservation_id = sqlc.arg(reservation_id) AND version < sqlc.arg(version) AND NOT final;

-- name: RmUsageAllocationEndAt :execrows
-- The reservation ended at `at`: the interval is cut there and its windows
-- become final.
UPDATE rm_usage_allocations
   SET end_ts = greatest(start_ts, least(end_ts, sqlc.arg(at)::timestamptz)), final = true, version = sqlc.arg(version)
 WHERE reservation_id = sqlc.arg(reservation_id) AND version < sqlc.arg(version) AND NOT final;

-- name: RmUsageAllocationListAll :many
SELECT reservation_id, allocation_id, tenant_id, pool_id, node_id, devices, vcpu, memory_mb, disk_gb,
       start_ts, end_ts, final, version, gpu_kind, gpu_model, mig_profile, slot_kind
  FROM rm_usage_allocations ORDER BY reservation_id;
