-- name: WebhookEndpointCreate :one
-- Guarded by the tenant's endpoint cap: zero rows when the tenant already
-- has max_endpoints endpoints (enabled or not). The caller holds the tenant
-- row lock (TenantLock), so two concurrent creates cannot both pass the
-- count: the second one's statement starts after the first committed.
INSERT INTO webhook_endpoints (id, tenant_id, url, event_types, description, secret)
SELECT sqlc.arg(id)::text, sqlc.arg(tenant_id)::text, sqlc.arg(url)::text, sqlc.arg(event_types)::text[],
       sqlc.arg(description)::text, sqlc.arg(secret)::text
 WHERE (SELECT count(*) FROM webhook_endpoints WHERE tenant_id = sqlc.arg(tenant_id)::text)
       < sqlc.arg(max_endpoints)::int
RETURNING *;

-- name: WebhookEndpointCount :one
SELECT count(*)::int AS endpoints FROM webhook_endpoints WHERE tenant_id = sqlc.arg(tenant_id);

-- name: WebhookEndpointGet :one
SELECT * FROM webhook_endpoints WHERE id = sqlc.arg(id);

-- name: WebhookEndpointGetForUpdate :one
-- Locks the endpoint for a read-modify-write (patch, rotate, recover,
-- delete): these commands serialise on it. FOR NO KEY UPDATE, not FOR
-- UPDATE: the webhook scheduler locks the endpoints of its batch FOR KEY
-- SHARE (WebhookDeliverySchedule), which FOR UPDATE would block, so a
-- tenant's recover of 10,000 deliveries would hold up every tenant's
-- scheduling. A delete still waits for the scheduler: its DELETE takes the
-- row's key lock.
SELECT * FROM webhook_endpoints WHERE id = sqlc.arg(id) FOR NO KEY UPDATE;

-- name: WebhookEndpointList :many
-- Keyset page by id. tenant_id NULL lists every tenant (operators).
SELECT * FROM webhook_endpoints
 WHERE (sqlc.narg(tenant_id)::text IS NULL OR tenant_id = sqlc.narg(tenant_id))
   AND id > sqlc.arg(after_id)::text
 ORDER BY id
 LIMIT sqlc.arg(max_rows);

-- name: WebhookEndpointUpdate :one
-- Writes a patched endpoint. Re-enabling a disabled endpoint clears the
-- failure state, so the five-day clock starts afresh; any other patch of
-- an enabled one (its description, even its URL) leaves the clock running,
-- or a failing endpoint would be kept alive by patching it. reset_breaker (re-enabling, or a new URL,
-- which is a new receiver) closes the circuit breaker. A patch that leaves
-- the URL, event types, description and enabled flag as they are matches
-- no row, like a stale version: nothing is written, the version stays and
-- no event follows (the caller tells the two apart by the version).
-- A new URL has never answered: answered goes back to false, so the
-- endpoint counts as suspect (migration 0061) until the new receiver's
-- first 2xx; otherwise a tenant could point an endpoint proven at one URL
-- at a receiver that hangs and have its requests counted as answering.
UPDATE webhook_endpoints
   SET url = sqlc.arg(url), event_types = sqlc.arg(event_types)::text[],
       description = sqlc.arg(description), enabled = sqlc.arg(enabled),
       disabled_reason = CASE WHEN sqlc.arg(enabled) THEN NULL ELSE sqlc.narg(disabled_reason)::text END,
       failing_since = CASE WHEN sqlc.arg(enabled) AND NOT enabled THEN NULL ELSE failing_since END,
       consecutive_failures = CASE WHEN sqlc.arg(reset_breaker)::bool THEN 0 ELSE consecutive_failures END,
       breaker_trips = CASE WHEN sqlc.arg(reset_breaker)::bool THEN 0 ELSE breaker_trips END,
       breaker_open_until = CASE WHEN sqlc.arg(reset_breaker)::bool THEN NULL ELSE breaker_open_until END,
       answered = answered AND url = sqlc.arg(url)::text,
       version = version + 1, updated_at = compute_now()
 WHERE id = sqlc.arg(id) AND version = sqlc.arg(version)
   AND (url, event_types, description, enabled)
       IS DISTINCT FROM (sqlc.arg(url)::text, sqlc.arg(event_types)::text[], sqlc.arg(description)::text, sqlc.arg(enabled)::bool)
RETURNING *;

-- name: WebhookEndpointDelete :execrows
DELETE FROM webhook_endpoints WHERE id = sqlc.arg(id);

-- name: WebhookEndpointRotateSecret :one
-- The old secret keeps signing beside the new one for overlap_seconds.
UPDATE webhook_endpoints
   SET previous_secret = secret, secret = sqlc.arg(secret),
       previous_secret_until = compute_now() + make_interval(secs => sqlc.arg(overlap_seconds)::float8),
       version = version + 1, updated_at = compute_now()
 WHERE id = sqlc.arg(id)
RETURNING *;

-- name: WebhookEndpointMarkFailing :one
-- Starts (or continues) the endpoint's run of failures, says whether it has
-- lasted long enough to disable the endpoint, and trips the breaker: the
-- failure that brings consecutive_failures to breaker_threshold (or any
-- failure after it, once the cool-down is over) opens it for
-- breaker_cooldown * 2^(openings since the last success), at most
-- breaker_max_cooldown. A failure while it is open (an attempt that started
-- before it opened) leaves the cool-down as it is.
UPDATE webhook_endpoints
   SET failing_since = COALESCE(failing_since, compute_now()),
       consecutive_failures = consecutive_failures + 1,
       breaker_trips = breaker_trips
         + CASE WHEN consecutive_failures + 1 >= sqlc.arg(breaker_threshold)::int
                 AND (breaker_open_until IS NULL OR breaker_open_until <= compute_now())
                THEN 1 ELSE 0 END,
       breaker_open_until =
         CASE WHEN consecutive_failures + 1 >= sqlc.arg(breaker_threshold)::int
               AND (breaker_open_until IS NULL OR breaker_open_until <= compute_now())
              THEN compute_now() + make_interval(secs => LEAST(
                     sqlc.arg(breaker_cooldown_seconds)::float8 * power(2, LEAST(breaker_trips, 30))::float8,
                     sqlc.arg(breaker_max_cooldown_seconds)::float8))
              ELSE breaker_open_until END
 WHERE id = sqlc.arg(id)
RETURNING (compute_now() - failing_since >= make_interval(secs => sqlc.arg(disable_after_seconds)::float8))::bool AS failing_too_long,
          consecutive_failures, breaker_trips, breaker_open_until;

-- name: WebhookEndpointMarkHealthy :exec
-- A success ends the run of failures, closes the breaker and marks the
-- endpoint answered (it no longer counts against the delivery pool's
-- suspect half). Guarded, so a healthy endpoint's row is not rewritten on
-- every delivery.
UPDATE webhook_endpoints
   SET failing_since = NULL, consecutive_failures = 0, breaker_trips = 0, breaker_open_until = NULL,
       answered = true
 WHERE id = sqlc.arg(id)
   AND (failing_since IS NOT NULL OR consecutive_failures > 0 OR breaker_trips > 0 OR breaker_open_until IS NOT NULL
        OR NOT answered);

-- name: WebhookEndpointStartRecover :one
-- Admits one recover of the endpoint per min_interval_seconds: started is
-- false when the last one was more recent, and retry_after_seconds says
-- how long until one is admitted. The caller holds the endpoint row FOR
-- UPDATE, so a concurrent recover waits for it and then finds
-- last_recover_at just set: rate limited.
WITH cur AS (
  SELECT w.id, w.last_recover_at FROM webhook_endpoints w WHERE w.id = sqlc.arg(id)::text
), started AS (
  UPDATE webhook_endpoints e
     SET last_recover_at = compute_now()
    FROM cur
   WHERE e.id = cur.id
     AND (e.last_recover_at IS NULL
          OR e.last_recover_at <= compute_now() - make_interval(secs => sqlc.arg(min_interval_seconds)::float8))
  RETURNING e.id
)
SELECT EXISTS (SELECT 1 FROM started) AS started,
       COALESCE(GREATEST(0, EXTRACT(EPOCH FROM
         cur.last_recover_at + make_interval(secs => sqlc.arg(min_interval_seconds)::float8) - compute_now())), 0)::float8
         AS retry_after_seconds
  FROM cur;

-- name: WebhookEndpointDisable :one
-- Guarded: zero rows when the endpoint is already disabled or gone, so the
-- disabled event is appended once.
UPDATE webhook_endpoints
   SET enabled = false, disabled_reason = sqlc.arg(reason), version = version + 1, updated_at = compute_now()
 WHERE id = sqlc.arg(id) AND enabled
RETURNING *;
