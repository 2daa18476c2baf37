-- name: WebhookDeliverySchedule :many
-- One delivery per enabled endpoint of each event's tenant whose filter
-- matches (an empty filter matches every type). Events come as parallel
-- arrays so a whole outbox batch is one statement. ON CONFLICT DO NOTHING
-- makes a re-read batch harmless; only new rows are returned.
-- The endpoints are locked FOR KEY SHARE, so that a tenant deleting one
-- cannot fail the batch of every tenant: without the lock, an endpoint this
-- statement read could be deleted, and the delete committed, before the
-- foreign-key check of its new delivery (webhook_deliveries_endpoint_id_fkey).
-- With it, a delete that is in flight is waited for and its endpoint left
-- out (under READ COMMITTED a locked row deleted meanwhile is skipped), and
-- a delete that comes later waits for this transaction and cascades to the
-- deliveries it made. KEY SHARE does not conflict with the FOR NO KEY UPDATE
-- of the other endpoint commands (WebhookEndpointGetForUpdate), nor with the
-- sink's own updates of an endpoint, so only a delete is waited for.
-- An event goes only to endpoints it follows in the log (its transaction's
-- id at least the endpoint's created_txid, migration 0053).
INSERT INTO webhook_deliveries (endpoint_id, event_id)
SELECT e.id, ev.event_id
  FROM (SELECT unnest(sqlc.arg(event_ids)::uuid[]) AS event_id,
               unnest(sqlc.arg(tenant_ids)::text[]) AS tenant_id,
               unnest(sqlc.arg(types)::text[]) AS type,
               unnest(sqlc.arg(txids)::xid8[]) AS txid) ev
  JOIN webhook_endpoints e ON e.tenant_id = ev.tenant_id
 WHERE e.enabled
   AND ev.txid >= e.created_txid
   AND (cardinality(e.event_types) = 0 OR ev.type = ANY(e.event_types))
   FOR KEY SHARE OF e
ON CONFLICT (endpoint_id, event_id) DO NOTHING
RETURNING id;

-- name: WebhookDeliveryLoad :one
-- Everything one attempt needs, read outside any transaction: the
-- delivery, its endpoint's URL, secrets and breaker, whether it is failing
-- (its last attempt failed) and whether it has ever answered, the event, the clock, and how many attempts of the tenant and of the endpoint are in flight
-- (a hint that saves the locked WebhookSlotAcquire when a cap is full;
-- the slot itself decides).
SELECT d.id, d.endpoint_id, d.event_id, d.state, d.attempts, d.next_attempt_at,
       e.url, e.secret, e.previous_secret, e.previous_secret_until, e.enabled, e.tenant_id,
       e.breaker_open_until, e.consecutive_failures > 0 AS failing, e.answered,
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
-- WebhookDeliveryLoad for the deliveries of one claim, in one statement
-- (Service.Prefetch), with the same columns; deliveries that are gone have
-- no row. It also takes the in-flight slot of each delivery that is
-- eligible: due, pending and enabled, its breaker closed and its caps not
-- plainly full by the counts read. The slot is taken by
-- webhook_slot_acquire, exactly as WebhookSlotAcquire calls it, under the
-- delivery's own shard lease (lease_names and lease_epochs, parallel to
-- ids). Locks are taken in one order, so that concurrent claims and lease
-- renewals cannot deadlock (each deadlock cost its deliveries the
-- second of deadlock_timeout): first every shard lease of the claim FOR
-- SHARE in name order, as LeaseAcquireMany takes them, then the slots in
-- tenant order (each call locks its tenant row). The lateral subquery's
-- WHERE keeps the call from running for a delivery that is not eligible
-- (a one-time filter: OFFSET 0 keeps the subquery from being flattened
-- into a join whose condition would be checked after the call), and
-- should the planner run it anyway, a cap of -1 makes it take no slot.
-- slot_tried says whether the call answered, the slot_ columns how.
WITH fence AS MATERIALIZED (
  SELECT f.name FROM leases f WHERE f.name = ANY(sqlc.arg(lease_names)::text[]) ORDER BY f.name FOR SHARE
), l AS MATERIALIZED (
  SELECT d.id, d.endpoint_id, d.event_id, d.state, d.attempts, d.next_attempt_at,
         e.url, e.secret, e.previous_secret, e.previous_secret_until, e.enabled, e.tenant_id,
         e.breaker_open_until, e.consecutive_failures > 0 AS failing, e.answered,
         o.type AS event_type, o.subject AS event_subject, o.data AS event_data, o.time AS event_time,
         compute_now()::timestamptz AS now,
         (SELECT count(*) FROM webhook_inflight i
           WHERE i.tenant_id = e.tenant_id AND i.until > compute_now() AND i.delivery_id <> d.id)::int AS tenant_inflight,
         (SELECT count(*) FROM webhook_inflight i
           WHERE i.endpoint_id = e.id AND i.until > compute_now() AND i.delivery_id <> d.id)::int AS endpoint_inflight,
         k.lease_name, k.lease_epoch, k.ord
    FROM (SELECT unnest(sqlc.arg(ids)::uuid[]) AS id,
                 unnest(sqlc.arg(lease_names)::text[]) AS lease_name,
                 unnest(sqlc.arg(lease_epochs)::bigint[]) AS lease_epoch,
                 generate_series(1, cardinality(sqlc.arg(ids)::uuid[])) AS ord) k
    JOIN webhook_deliveries d ON d.id = k.id
    JOIN webhook_endpoints e ON e.id = d.endpoint_id
    JOIN outbox o ON o.id = d.event_id
   CROSS JOIN (SELECT count(*) FROM fence) fenced
), c AS MATERIALIZED (
  SELECT l.*,
         (l.state = 'pending' AND l.enabled AND l.next_attempt_at <= l.now
          AND (l.breaker_open_until IS NULL OR l.breaker_open_until <= l.now)
          AND l.tenant_inflight < sqlc.arg(max_per_tenant)::int
          AND l.endpoint_inflight < sqlc.arg(max_per_endpoint)::int) AS eligible
    FROM l
   ORDER BY l.tenant_id, l.ord
)
SELECT c.id, c.endpoint_id, c.event_id, c.state, c.attempts, c.next_attempt_at,
       c.url, c.secret, c.previous_secret, c.previous_secret_until, c.enabled, c.tenant_id,
       c.breaker_open_until, c.failing, c.answered, c.event_type, c.event_subject, c.event_data, c.event_time,
       c.now, c.tenant_inflight, c.endpoint_inflight,
       (a.acquired IS NOT NULL)::bool AS slot_tried,
       COALESCE(a.acquired, false)::bool AS slot_acquired,
       COALESCE(a.open_until, 'epoch')::timestamptz AS slot_breaker_open_until,
       COALESCE(a.tenant_slots, 0)::int AS slot_tenant_inflight,
       COALESCE(a.endpoint_slots, 0)::int AS slot_endpoint_inflight
  FROM c
  LEFT JOIN LATERAL (
        SELECT s.acquired::bool AS acquired, s.open_until::timestamptz AS open_until,
               s.tenant_slots::int AS tenant_slots, s.endpoint_slots::int AS endpoint_slots
          FROM webhook_slot_acquire(c.id, c.endpoint_id, sqlc.arg(hold_seconds)::float8,
                                    CASE WHEN c.eligible THEN sqlc.arg(max_per_tenant)::int ELSE -1 END,
                                    sqlc.arg(max_per_endpoint)::int,
                                    c.lease_name, sqlc.arg(lease_owner)::text, c.lease_epoch) s
         WHERE c.eligible
        OFFSET 0) a ON true;

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
-- Never an event older than the endpoint: it did not subscribe to those.
-- Older is the scheduler's bound (WebhookDeliverySchedule): an event whose
-- transaction's id is below the endpoint's created_txid. Bounded by
-- created_at instead, recover and the scheduler disagreed on the events of
-- transactions that straddled the endpoint's creation (an event's time is
-- its transaction's start, its order in the log its transaction's id). An
-- endpoint made before migration 0053 (created_txid 0), which the
-- scheduler sends every event, keeps the created_at bound here.
-- Acknowledged events are left out before the LIMIT, so that max_rows
-- counts what is re-sent: spent on succeeded deliveries, it would schedule
-- nothing of what was missed after them, and the caller, which reads
-- "truncated" from the count of rows returned, would not know.
-- So are deliveries already due for their first attempt (the scheduler's
-- new ones, or a recover's before): a recover cut short by max_rows and
-- run again with the same since, before a slow receiver acknowledged the
-- first batch, picked that batch again and never reached the rest.
INSERT INTO webhook_deliveries AS d (endpoint_id, event_id)
SELECT e.id, o.id
  FROM webhook_endpoints e
  JOIN outbox o ON o.tenant_id = e.tenant_id
 WHERE e.id = sqlc.arg(endpoint_id)
   AND o.time >= sqlc.arg(since)
   AND o.txid >= e.created_txid
   AND (e.created_txid <> '0' OR o.time >= e.created_at)
   AND (cardinality(e.event_types) = 0 OR o.type = ANY(e.event_types))
   AND NOT EXISTS (SELECT 1 FROM webhook_deliveries s
                    WHERE s.endpoint_id = e.id AND s.event_id = o.id
                      AND (s.state = 'succeeded'
                           OR (s.state = 'pending' AND s.attempts = 0 AND s.next_attempt_at <= compute_now())))
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
