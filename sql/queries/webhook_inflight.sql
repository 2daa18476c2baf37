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
-- counts do not change, so no tenant lock is needed. The old slot row goes
-- and the new one comes in its place; zero rows when the waiting delivery
-- belongs to another endpoint (its slot is then only freed) or holds a slot
-- already, which it may have taken a moment ago: ON CONFLICT, not a unique
-- violation, because this runs inside the transaction that records the
-- success, and an error would undo the record (and the delivery would be
-- POSTed again).
WITH gone AS (
  DELETE FROM webhook_inflight i WHERE i.delivery_id = sqlc.arg(from_delivery)::uuid
  RETURNING i.endpoint_id, i.tenant_id
)
INSERT INTO webhook_inflight (delivery_id, endpoint_id, tenant_id, until)
SELECT sqlc.arg(to_delivery)::uuid, g.endpoint_id, g.tenant_id,
       compute_now() + make_interval(secs => sqlc.arg(hold_seconds)::float8)
  FROM gone g
 WHERE g.endpoint_id = (SELECT d.endpoint_id FROM webhook_deliveries d WHERE d.id = sqlc.arg(to_delivery)::uuid)
ON CONFLICT (delivery_id) DO NOTHING;

