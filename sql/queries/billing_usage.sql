-- Queries of billing: the usage-windows projection's fallback for old
-- events, the closed windows the billing sink sends, and its attempts
-- (billing_deliveries).

-- name: BillingUsageFallback :one
-- For reservation events written before they carried the allocation id and
-- the GPU request: both from the write model, where neither changes once
-- the reservation is placed (a reservation has at most one allocation), so
-- a replay reads the same values. The reservation id stands for the
-- allocation only if no allocation row exists.
SELECT coalesce((SELECT a.id FROM allocations a WHERE a.reservation_id = r.id
                  ORDER BY a.created_at, a.id LIMIT 1), r.id)::text AS allocation_id,
       (CASE WHEN coalesce((r.spec->'gpu'->>'count')::int, 0) > 0
             THEN coalesce(r.spec->'gpu'->>'kind', '') ELSE '' END)::text AS gpu_kind,
       coalesce(r.spec->'gpu'->>'model', '')::text AS gpu_model,
       coalesce(r.spec->'gpu'->>'migProfile', '')::text AS mig_profile,
       coalesce(r.spec->'gpu'->>'slotKind', '')::text AS slot_kind
  FROM reservations r WHERE r.id = sqlc.arg(reservation_id);

-- name: BillingWindowsClosed :many
-- The closed (final) usage windows of one reservation, oldest first: what
-- the billing sink sends once the reservation has ended.
SELECT key, allocation_id, reservation_id, tenant_id, pool_id, node_id, window_start, window_end, reserved_ms,
       devices, device_ms, vcpu, memory_mb, disk_gb, final, gpu_kind, gpu_model, mig_profile, slot_kind
  FROM rm_usage_windows
 WHERE reservation_id = sqlc.arg(reservation_id) AND final
 ORDER BY window_start, key;

-- name: BillingDeliveryStates :many
-- The billing sink's attempts at some windows: a window is due when it has
-- no row, or is undelivered and its next_attempt_at has passed (by
-- compute_now()).
SELECT key, attempts, delivered_at, next_attempt_at
  FROM billing_deliveries
 WHERE key = ANY(sqlc.arg(keys)::text[]);

-- name: BillingDeliveryRecord :exec
-- One attempt at a window: delivered (delivered_at set, never unset) or
-- failed, to be tried again after retry_after_ms.
INSERT INTO billing_deliveries AS d (key, allocation_id, tenant_id, window_start, attempts, last_status, last_error,
       next_attempt_at, delivered_at, updated_at)
VALUES (sqlc.arg(key), sqlc.arg(allocation_id), sqlc.arg(tenant_id), sqlc.arg(window_start), 1,
        sqlc.narg(last_status), sqlc.arg(last_error),
        compute_now() + make_interval(secs => sqlc.arg(retry_after_ms)::bigint / 1000.0),
        CASE WHEN sqlc.arg(delivered)::boolean THEN compute_now() END, compute_now())
ON CONFLICT (key) DO UPDATE
   SET attempts = d.attempts + 1, last_status = EXCLUDED.last_status, last_error = EXCLUDED.last_error,
       next_attempt_at = EXCLUDED.next_attempt_at, delivered_at = coalesce(d.delivered_at, EXCLUDED.delivered_at),
       updated_at = EXCLUDED.updated_at;

-- name: BillingDeliveryList :many
-- The billing sink's attempts, newest window first: for `compute check`,
-- tests and operators.
SELECT key, allocation_id, tenant_id, window_start, attempts, last_status, last_error, next_attempt_at,
       delivered_at, updated_at
  FROM billing_deliveries
 ORDER BY window_start DESC, key
 LIMIT sqlc.arg(max_rows);
