-- Queries of rm_usage_windows. The file name is singular: a "_windows" suffix
-- would make the generated Go file a GOOS=windows-only file.

-- name: RmUsageWindowDeleteFor :exec
-- The windows of the reservations, before RmUsageWindowRecompute writes
-- them again: one statement for a batch's reservations.
DELETE FROM rm_usage_windows WHERE reservation_id = ANY(sqlc.arg(reservation_ids)::text[]);

-- name: RmUsageWindowRecompute :exec
-- Cuts each reservation's reserved interval into hourly windows aligned on
-- UTC hours, keyed cmp:<allocationId>:<windowStart>. Run after
-- RmUsageWindowDeleteFor in the same transaction. A window's reserved_ms is
-- measured between its two ends, each rounded down to the millisecond (the
-- clock has microseconds): the hours inside are whole, so the windows of an
-- interval add up to the interval measured in one piece. Rounding each
-- window's length instead lost up to a millisecond at every cut.
INSERT INTO rm_usage_windows (key, allocation_id, reservation_id, tenant_id, pool_id, node_id, window_start,
       window_end, reserved_ms, devices, device_ms, vcpu, memory_mb, disk_gb, final, gpu_kind, gpu_model,
       mig_profile, slot_kind)
SELECT 'cmp:' || u.allocation_id || ':' || to_char(w.ws AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       u.allocation_id, u.reservation_id, u.tenant_id, u.pool_id, u.node_id, w.ws, w.ws + interval '1 hour',
       o.ms, u.devices, o.ms * u.devices, u.vcpu, u.memory_mb, u.disk_gb, u.final, u.gpu_kind, u.gpu_model,
       u.mig_profile, u.slot_kind
  FROM rm_usage_allocations u
 CROSS JOIN LATERAL generate_series(date_trunc('hour', u.start_ts, 'UTC'), u.end_ts - interval '1 microsecond',
                                    interval '1 hour') AS w(ws)
 CROSS JOIN LATERAL (SELECT (floor(extract(epoch FROM least(u.end_ts, w.ws + interval '1 hour')) * 1000)
                             - floor(extract(epoch FROM greatest(u.start_ts, w.ws)) * 1000))::bigint AS ms) o
 WHERE u.reservation_id = ANY(sqlc.arg(reservation_ids)::text[]) AND u.end_ts > u.start_ts AND o.ms > 0;

-- name: RmUsageWindowList :many
-- A keyset page of windows in (window_start, key) order, optionally of one
-- tenant and one reservation.
SELECT key, allocation_id, reservation_id, tenant_id, pool_id, node_id, window_start, window_end, reserved_ms,
       devices, device_ms, vcpu, memory_mb, disk_gb, final, gpu_kind, gpu_model, mig_profile, slot_kind
  FROM rm_usage_windows
 WHERE (sqlc.narg(tenant_id)::text IS NULL OR tenant_id = sqlc.narg(tenant_id)::text)
   AND (sqlc.narg(reservation_id)::text IS NULL OR reservation_id = sqlc.narg(reservation_id)::text)
   AND (window_start, key) > (sqlc.arg(after_start)::timestamptz, sqlc.arg(after_key)::text)
 ORDER BY window_start, key
 LIMIT sqlc.arg(max_rows);

-- name: RmUsageWindowListAll :many
SELECT key, allocation_id, reservation_id, tenant_id, pool_id, node_id, window_start, window_end, reserved_ms,
       devices, device_ms, vcpu, memory_mb, disk_gb, final, gpu_kind, gpu_model, mig_profile, slot_kind
  FROM rm_usage_windows ORDER BY key;
