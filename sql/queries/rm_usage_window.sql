-- Queries of rm_usage_windows. The file name is singular: a "_windows" suffix
-- would make the generated Go file a GOOS=windows-only file.

-- name: RmUsageWindowRecompute :exec
-- Cuts each reservation's reserved interval into hourly windows aligned on
-- UTC hours, keyed cmp:<allocationId>:<windowStart>, and brings the
-- reservation's rows to exactly those windows: a window it no longer has
-- goes, a new one is added, and a window is rewritten only if something of
-- it changed. An extension of a 90-day reservation thus writes the window
-- or two at its end, not its 2,160 windows (a tenant extending one by a
-- second at a time made the projection rewrite them all at every batch).
-- A window's reserved_ms is measured between its two ends, each rounded
-- down to the millisecond (the clock has microseconds): the hours inside
-- are whole, so the windows of an interval add up to the interval measured
-- in one piece. Rounding each window's length instead lost up to a
-- millisecond at every cut.
WITH wanted AS (
  SELECT 'cmp:' || u.allocation_id || ':' || to_char(w.ws AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS key,
         u.allocation_id, u.reservation_id, u.tenant_id, u.pool_id, u.node_id, w.ws AS window_start,
         w.ws + interval '1 hour' AS window_end, o.ms AS reserved_ms, u.devices, o.ms * u.devices AS device_ms,
         u.vcpu, u.memory_mb, u.disk_gb, u.final, u.gpu_kind, u.gpu_model, u.mig_profile, u.slot_kind
    FROM rm_usage_allocations u
   CROSS JOIN LATERAL generate_series(date_trunc('hour', u.start_ts, 'UTC'), u.end_ts - interval '1 microsecond',
                                      interval '1 hour') AS w(ws)
   CROSS JOIN LATERAL (SELECT (floor(extract(epoch FROM least(u.end_ts, w.ws + interval '1 hour')) * 1000)
                               - floor(extract(epoch FROM greatest(u.start_ts, w.ws)) * 1000))::bigint AS ms) o
   WHERE u.reservation_id = ANY(sqlc.arg(reservation_ids)::text[]) AND u.end_ts > u.start_ts AND o.ms > 0
), gone AS (
  DELETE FROM rm_usage_windows x
   WHERE x.reservation_id = ANY(sqlc.arg(reservation_ids)::text[])
     AND NOT EXISTS (SELECT 1 FROM wanted n WHERE n.key = x.key)
)
INSERT INTO rm_usage_windows AS x (key, allocation_id, reservation_id, tenant_id, pool_id, node_id, window_start,
       window_end, reserved_ms, devices, device_ms, vcpu, memory_mb, disk_gb, final, gpu_kind, gpu_model,
       mig_profile, slot_kind)
SELECT key, allocation_id, reservation_id, tenant_id, pool_id, node_id, window_start, window_end, reserved_ms,
       devices, device_ms, vcpu, memory_mb, disk_gb, final, gpu_kind, gpu_model, mig_profile, slot_kind
  FROM wanted
ON CONFLICT (key) DO UPDATE
   SET allocation_id = EXCLUDED.allocation_id, reservation_id = EXCLUDED.reservation_id,
       tenant_id = EXCLUDED.tenant_id, pool_id = EXCLUDED.pool_id, node_id = EXCLUDED.node_id,
       window_start = EXCLUDED.window_start, window_end = EXCLUDED.window_end,
       reserved_ms = EXCLUDED.reserved_ms, devices = EXCLUDED.devices, device_ms = EXCLUDED.device_ms,
       vcpu = EXCLUDED.vcpu, memory_mb = EXCLUDED.memory_mb, disk_gb = EXCLUDED.disk_gb, final = EXCLUDED.final,
       gpu_kind = EXCLUDED.gpu_kind, gpu_model = EXCLUDED.gpu_model, mig_profile = EXCLUDED.mig_profile,
       slot_kind = EXCLUDED.slot_kind
 WHERE (x.allocation_id, x.reservation_id, x.tenant_id, x.pool_id, x.node_id, x.window_start, x.window_end,
        x.reserved_ms, x.devices, x.device_ms, x.vcpu, x.memory_mb, x.disk_gb, x.final, x.gpu_kind, x.gpu_model,
        x.mig_profile, x.slot_kind)
       IS DISTINCT FROM
       (EXCLUDED.allocation_id, EXCLUDED.reservation_id, EXCLUDED.tenant_id, EXCLUDED.pool_id, EXCLUDED.node_id,
        EXCLUDED.window_start, EXCLUDED.window_end, EXCLUDED.reserved_ms, EXCLUDED.devices, EXCLUDED.device_ms,
        EXCLUDED.vcpu, EXCLUDED.memory_mb, EXCLUDED.disk_gb, EXCLUDED.final, EXCLUDED.gpu_kind, EXCLUDED.gpu_model,
        EXCLUDED.mig_profile, EXCLUDED.slot_kind);

-- name: RmUsageWindowList :many
-- A keyset page of every tenant's windows in (window_start, key) order (an
-- operator's list). One tenant's pages are RmUsageWindowListOfTenant, one
-- reservation's RmUsageWindowListOfReservation: a filter "$1 IS NULL OR
-- tenant_id = $1" here could not be looked up by index in the generic plan
-- a connection caches, which walked every tenant's windows in this order
-- for a tenant of ten (queries/TestTenantUsagePagesReadThePage).
SELECT key, allocation_id, reservation_id, tenant_id, pool_id, node_id, window_start, window_end, reserved_ms,
       devices, device_ms, vcpu, memory_mb, disk_gb, final, gpu_kind, gpu_model, mig_profile, slot_kind
  FROM rm_usage_windows
 WHERE (window_start, key) > (sqlc.arg(after_start)::timestamptz, sqlc.arg(after_key)::text)
 ORDER BY window_start, key
 LIMIT sqlc.arg(max_rows);

-- name: RmUsageWindowListOfTenant :many
-- RmUsageWindowList's page of one tenant, from rm_usage_windows_tenant. The
-- tenant is bounded by comparisons and ordered by, rather than
-- tenant_id =, so that only that index gives the order (the same reasoning
-- as RmReservationListOfTenant's): with tenant_id = the order is
-- (window_start, key) alone, which rm_usage_windows_order gives too.
SELECT key, allocation_id, reservation_id, tenant_id, pool_id, node_id, window_start, window_end, reserved_ms,
       devices, device_ms, vcpu, memory_mb, disk_gb, final, gpu_kind, gpu_model, mig_profile, slot_kind
  FROM rm_usage_windows
 WHERE (tenant_id, window_start, key) > (sqlc.arg(tenant_id)::text, sqlc.arg(after_start)::timestamptz, sqlc.arg(after_key)::text)
   AND tenant_id <= sqlc.arg(tenant_id)::text
 ORDER BY tenant_id, window_start, key
 LIMIT sqlc.arg(max_rows);

-- name: RmUsageWindowListOfReservation :many
-- RmUsageWindowList's page of one reservation, of one tenant when
-- tenant_id is set (a tenant's own reservation; another's has no window
-- here), from rm_usage_windows_reservation_order, bounded by and ordered by
-- the reservation for the same reason as RmUsageWindowListOfTenant's
-- tenant.
SELECT key, allocation_id, reservation_id, tenant_id, pool_id, node_id, window_start, window_end, reserved_ms,
       devices, device_ms, vcpu, memory_mb, disk_gb, final, gpu_kind, gpu_model, mig_profile, slot_kind
  FROM rm_usage_windows
 WHERE (reservation_id, window_start, key) > (sqlc.arg(reservation_id)::text, sqlc.arg(after_start)::timestamptz, sqlc.arg(after_key)::text)
   AND reservation_id <= sqlc.arg(reservation_id)::text
   AND (sqlc.narg(tenant_id)::text IS NULL OR tenant_id = sqlc.narg(tenant_id)::text)
 ORDER BY reservation_id, window_start, key
 LIMIT sqlc.arg(max_rows);

-- name: RmUsageWindowListAll :many
SELECT key, allocation_id, reservation_id, tenant_id, pool_id, node_id, window_start, window_end, reserved_ms,
       devices, device_ms, vcpu, memory_mb, disk_gb, final, gpu_kind, gpu_model, mig_profile, slot_kind
  FROM rm_usage_windows ORDER BY key;
