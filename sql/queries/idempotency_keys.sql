-- name: IdempotencyKeyDeleteExpired :execrows
DELETE FROM idempotency_keys
 WHERE tenant_id = sqlc.arg(tenant_id) AND identity = sqlc.arg(identity) AND key = sqlc.arg(key)
   AND expires_at <= compute_now();

-- name: IdempotencyKeyClaim :execrows
-- Claims a key for this request. Zero rows: the key exists (a concurrent
-- first request holding it makes this wait until it commits or rolls back).
INSERT INTO idempotency_keys (tenant_id, identity, key, request_hash, expires_at)
VALUES (sqlc.arg(tenant_id), sqlc.arg(identity), sqlc.arg(key), sqlc.arg(request_hash),
        compute_now() + make_interval(secs => sqlc.arg(ttl_seconds)::float8))
ON CONFLICT DO NOTHING;

-- name: IdempotencyKeyGet :one
SELECT tenant_id, identity, key, request_hash, response, expires_at FROM idempotency_keys
 WHERE tenant_id = sqlc.arg(tenant_id) AND identity = sqlc.arg(identity) AND key = sqlc.arg(key);

-- name: IdempotencyKeyComplete :execrows
UPDATE idempotency_keys SET response = sqlc.arg(response)
 WHERE tenant_id = sqlc.arg(tenant_id) AND identity = sqlc.arg(identity) AND key = sqlc.arg(key);

-- name: IdempotencyKeyPurgeExpired :execrows
DELETE FROM idempotency_keys WHERE expires_at <= compute_now();

-- name: IdempotencyKeyHeldHash :one
-- The request hash a live key holds; no row: the key is free (never used,
-- or expired). Read without a lock: it only decides how to word a refusal.
SELECT request_hash FROM idempotency_keys
 WHERE tenant_id = sqlc.arg(tenant_id) AND identity = sqlc.arg(identity) AND key = sqlc.arg(key)
   AND expires_at > compute_now();
