-- name: WebhookDeliverySchedule :many
-- One delivery per enabled endpoint of each event's tenant whose filter
-- matches (an empty filter matches every type). Events come as parallel
-- arrays so a whole outbox batch is one statement. ON CONFLICT DO NOTHING
-- makes a re-read batch harmless; only new rows are returned.
INSERT INTO webhook_deliveries (endpoint_id, event_id)
SELECT e.id, ev.event_id
  FROM (SELECT unnest(sqlc.arg(event_ids)::uuid[]) AS event_id,
               unnest(sqlc.arg(tenant_ids)::text[]) AS tenant_id,
               unnest(sqlc.arg(types)::text[]) AS type) ev
  JOIN webhook_endpoints e ON e.tenant_id = ev.tenant_id
 WHERE e.enabled
   AND (cardinality(e.event_types) = 0 OR ev.type = ANY(e.event_types))
ON CONFLICT (endpoint_id, event_id) DO NOTHING
RETURNING id;

-- name: WebhookDeliveryLoad :one
-- Everything one attempt needs, read outside any transaction: the
-- delivery, its endpoint's URL, secrets and breaker, the event, the clock,
-- and how many attempts of the tenant and of the endpoint are in flight
-- (a hint that saves the locked WebhookSlotAcquire when a cap is full;
-- the slot itself decides).
SELECT d.id, d.endpoint_id, d.event_id, d.state, d.attempts, d.next_attempt_at,
       e.url, e.secret, e.previous_secret, e.previous_secret_until, e.enabled, e.tenant_id,
       e.breaker_open_until,
       o.type AS event_type, o.subject AS event_subject, o.data AS event_data, o.time AS event_time,
       compute_now()::timestamptz AS now,
       (SELECT count(*) FROM webhook_inflight i
         WHERE i.tenant_id = e.tenant_id AND i.until > compute_now() AND i.delivery_id <> d.id)::int AS tenant_inflight,
       (SELECT count(*) FROM webhook_inflight i
         WHERE i.endpoint_id = e.id AND i.until > compute_now() AND i.delivery_id <> d.id)::int AS endpoint_inflight
  FROM webhook_deliveries d
  JOIN webhook_endpoints e ON e.id = d.endpoint_id
  JOIN outbox o ON o.id = d.event_id
 WHERE d.id = sqlc.arg(id);

-- name: WebhookDeliveryLoadMany :many
-- WebhookDeliveryLoad for several deliveries in one statement: the worker
-- loads the deliveries of a whole claim at once (Service.Prefetch). Same
-- columns; deliveries that are gone have no row.
SELECT d.id, d.endpoint_id, d.event_id, d.state, d.attempts, d.next_attempt_at,
       e.url, e.secret, e.previous_secret, e.previous_secret_until, e.enabled, e.tenant_id,
       e.breaker_open_until,
       o.type AS event_type, o.subject AS event_subject, o.data AS event_data, o.time AS event_time,
       compute_now()::timestamptz AS now,
       (SELECT count(*) FROM webhook_inflight i
         WHERE i.tenant_id = e.tenant_id AND i.until > compute_now() AND i.delivery_id <> d.id)::int AS tenant_inflight,
       (SELECT count(*) FROM webhook_inflight i
         WHERE i.endpoint_id = e.id AND i.until > compute_now() AND i.delivery_id <> d.id)::int AS endpoint_inflight
  FROM webhook_deliveries d
  JOIN webhook_endpoints e ON e.id = d.endpoint_id
  JOIN outbox o ON o.id = d.event_id
 WHERE d.id = ANY(sqlc.arg(ids)::uuid[]);

-- name: WebhookDeliveryRecord :execrows
-- Records the outcome of attempt number `attempts`. Guarded on the previous
-- count, so an attempt recorded twice (a re-run after a crash) changes
-- nothing the second time.
UPDATE webhook_deliveries
   SET attempts = sqlc.arg(attempts), state = sqlc.arg(state),
       next_attempt_at = compute_now() + make_interval(secs => sqlc.arg(delay_seconds)::float8),
       last_status = sqlc.narg(last_status), last_error = sqlc.narg(last_error),
       updated_at = compute_now()
 WHERE id = sqlc.arg(id) AND state = 'pending' AND attempts = sqlc.arg(attempts) - 1;

-- name: WebhookDeliveryAbandon :execrows
-- A pending delivery whose endpoint was disabled is given up.
UPDATE webhook_deliveries SET state = 'abandoned', updated_at = compute_now()
 WHERE id = sqlc.arg(id) AND state = 'pending';

-- name: WebhookDeliveryRecover :many
-- Re-schedules the endpoint's deliveries of events since `since` that did
-- not succeed, creating those that were never scheduled (the endpoint was
-- disabled, or filtered the type out then). Attempts restart from zero.
INSERT INTO webhook_deliveries AS d (endpoint_id, event_id)
SELECT e.id, o.id
  FROM webhook_endpoints e
  JOIN outbox o ON o.tenant_id = e.tenant_id
 WHERE e.id = sqlc.arg(endpoint_id)
   AND o.time >= sqlc.arg(since)
   AND (cardinality(e.event_types) = 0 OR o.type = ANY(e.event_types))
 ORDER BY o.txid, o.seq
 LIMIT sqlc.arg(max_rows)
ON CONFLICT (endpoint_id, event_id) DO UPDATE
   SET state = 'pending', attempts = 0, next_attempt_at = compute_now(),
       last_status = NULL, last_error = NULL, updated_at = compute_now()
 WHERE d.state <> 'succeeded'
RETURNING d.id;

-- name: WebhookDeliveryGet :one
SELECT * FROM webhook_deliveries WHERE id = sqlc.arg(id);

-- name: WebhookDeliveryByEndpointEvent :one
SELECT * FROM webhook_deliveries WHERE endpoint_id = sqlc.arg(endpoint_id) AND event_id = sqlc.arg(event_id);
