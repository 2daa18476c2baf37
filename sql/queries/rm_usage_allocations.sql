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

-- name: RmUsageAllocationSeed :execrows
-- A reservation whose booking is not in the log (a rebuild after its
-- booked event was pruned) gets its interval from the event that follows
-- it and from the write model, where what it needs never changes once the
-- reservation is placed: the allocation's creation (its booking) and the
-- pool of its node. Its version is the one before the event's (a booking
-- is at least version 1, so an event after it at least 2), so the event
-- applies next as it would have. A reservation that has an interval keeps
-- it.
INSERT INTO rm_usage_allocations (reservation_id, allocation_id, tenant_id, pool_id, node_id, devices, vcpu,
       memory_mb, disk_gb, start_ts, end_ts, final, version, gpu_kind, gpu_model, mig_profile, slot_kind)
SELECT sqlc.arg(reservation_id), a.id, sqlc.arg(tenant_id), n.pool_id, a.node_id,
       sqlc.arg(devices), sqlc.arg(vcpu), sqlc.arg(memory_mb), sqlc.arg(disk_gb),
       greatest(sqlc.arg(start_ts)::timestamptz, a.created_at),
       greatest(sqlc.arg(start_ts)::timestamptz, a.created_at, sqlc.arg(end_ts)::timestamptz),
       false, greatest(sqlc.arg(version)::bigint - 1, 1),
       sqlc.arg(gpu_kind), sqlc.arg(gpu_model), sqlc.arg(mig_profile), sqlc.arg(slot_kind)
  FROM allocations a JOIN nodes n ON n.id = a.node_id
 WHERE a.id = sqlc.arg(allocation_id) AND a.reservation_id = sqlc.arg(reservation_id)
ON CONFLICT (reservation_id) DO NOTHING;
