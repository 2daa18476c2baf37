-- name: WebhookEndpointCreate :one
INSERT INTO webhook_endpoints (id, tenant_id, url, event_types, description, secret)
VALUES (sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(url), sqlc.arg(event_types)::text[],
        sqlc.arg(description), sqlc.arg(secret))
RETURNING *;

-- name: WebhookEndpointGet :one
SELECT * FROM webhook_endpoints WHERE id = sqlc.arg(id);

-- name: WebhookEndpointGetForUpdate :one
-- Locks the endpoint for a read-modify-write (patch, rotate).
SELECT * FROM webhook_endpoints WHERE id = sqlc.arg(id) FOR UPDATE;

-- name: WebhookEndpointList :many
-- Keyset page by id. tenant_id NULL lists every tenant (operators).
SELECT * FROM webhook_endpoints
 WHERE (sqlc.narg(tenant_id)::text IS NULL OR tenant_id = sqlc.narg(tenant_id))
   AND id > sqlc.arg(after_id)::text
 ORDER BY id
 LIMIT sqlc.arg(max_rows);

-- name: WebhookEndpointUpdate :one
-- Writes a patched endpoint. Re-enabling clears the failure state, so the
-- five-day clock starts afresh.
UPDATE webhook_endpoints
   SET url = sqlc.arg(url), event_types = sqlc.arg(event_types)::text[],
       description = sqlc.arg(description), enabled = sqlc.arg(enabled),
       disabled_reason = CASE WHEN sqlc.arg(enabled) THEN NULL ELSE sqlc.narg(disabled_reason)::text END,
       failing_since = CASE WHEN sqlc.arg(enabled) THEN NULL ELSE failing_since END,
       version = version + 1, updated_at = compute_now()
 WHERE id = sqlc.arg(id) AND version = sqlc.arg(version)
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
-- Starts (or continues) the endpoint's run of failures and says whether it
-- has lasted long enough to disable the endpoint.
UPDATE webhook_endpoints
   SET failing_since = COALESCE(failing_since, compute_now())
 WHERE id = sqlc.arg(id)
RETURNING (compute_now() - failing_since >= make_interval(secs => sqlc.arg(disable_after_seconds)::float8))::bool AS failing_too_long;

-- name: WebhookEndpointMarkHealthy :exec
UPDATE webhook_endpoints SET failing_since = NULL
 WHERE id = sqlc.arg(id) AND failing_since IS NOT NULL;

-- name: WebhookEndpointDisable :one
-- Guarded: zero rows when the endpoint is already disabled or gone, so the
-- disabled event is appended once.
UPDATE webhook_endpoints
   SET enabled = false, disabled_reason = sqlc.arg(reason), version = version + 1, updated_at = compute_now()
 WHERE id = sqlc.arg(id) AND enabled
RETURNING *;
