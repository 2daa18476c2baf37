-- name: WebhookSlotAcquire :one
-- Takes an in-flight slot for one attempt of a delivery, guarded by the
-- breaker and the caps, under the tenant lock and the caller's shard lease
-- fence: see webhook_slot_acquire in sql/migrations/0017_webhook_fairness.sql.
-- breaker_open_until is the epoch when the breaker never opened.
SELECT s.acquired::bool AS acquired, s.fenced::bool AS fenced, COALESCE(s.open_until, 'epoch')::timestamptz AS breaker_open_until,
       s.tenant_slots::int AS tenant_inflight, s.endpoint_slots::int AS endpoint_inflight,
       s.db_now::timestamptz AS now
  FROM webhook_slot_acquire(sqlc.arg(delivery_id)::uuid, sqlc.arg(endpoint_id)::text, sqlc.arg(hold_seconds)::float8,
                            sqlc.arg(max_per_tenant)::int, sqlc.arg(max_per_endpoint)::int,
                            sqlc.arg(lease_name)::text, sqlc.arg(lease_owner)::text, sqlc.arg(lease_epoch)::bigint) s;

-- name: WebhookSlotRelease :exec
-- Frees the delivery's slot once its request is over.
DELETE FROM webhook_inflight WHERE delivery_id = sqlc.arg(delivery_id);

-- name: WebhookSlotCounts :one
-- Live in-flight attempts of a tenant and of one endpoint, for tests and
-- diagnostics.
SELECT (SELECT count(*) FROM webhook_inflight i
         WHERE i.tenant_id = sqlc.arg(tenant_id)::text AND i.until > compute_now())::int AS tenant_inflight,
       (SELECT count(*) FROM webhook_inflight i
         WHERE i.endpoint_id = sqlc.arg(endpoint_id)::text AND i.until > compute_now())::int AS endpoint_inflight;

-- name: WebhookSlotHandOver :execrows
-- Hands the slot of a delivery whose request is over (and succeeded) to a
-- delivery of the same endpoint that waits for one, in one statement: the
-- counts do not change, so no tenant lock is needed. Zero rows when the
-- waiting delivery holds a slot already or belongs to another endpoint.
UPDATE webhook_inflight i
   SET delivery_id = sqlc.arg(to_delivery)::uuid,
       until = compute_now() + make_interval(secs => sqlc.arg(hold_seconds)::float8)
 WHERE i.delivery_id = sqlc.arg(from_delivery)::uuid
   AND i.endpoint_id = (SELECT d.endpoint_id FROM webhook_deliveries d WHERE d.id = sqlc.arg(to_delivery)::uuid)
   AND NOT EXISTS (SELECT 1 FROM webhook_inflight o WHERE o.delivery_id = sqlc.arg(to_delivery)::uuid);
