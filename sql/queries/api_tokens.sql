-- name: ApiTokenCreate :one
-- expires_at NULL: the token never expires.
INSERT INTO api_tokens (id, token_hash, tenant_id, identity, role, expires_at)
VALUES (sqlc.arg(id), sqlc.arg(token_hash), sqlc.arg(tenant_id), sqlc.arg(identity), sqlc.arg(role),
        sqlc.narg(expires_at)::timestamptz)
RETURNING id, tenant_id, identity, role, created_at, revoked_at, expires_at;

-- name: ApiTokenByHash :one
-- The token a secret stands for, unless revoked or expired. db_now is the
-- business time of the lookup, so that a cache keeps the answer no longer
-- than until expires_at.
SELECT id, tenant_id, identity, role, expires_at, compute_now()::timestamptz AS db_now FROM api_tokens
 WHERE token_hash = sqlc.arg(token_hash) AND revoked_at IS NULL
   AND (expires_at IS NULL OR expires_at > compute_now());

-- name: ApiTokenGet :one
SELECT id, tenant_id, identity, role, created_at, revoked_at, expires_at FROM api_tokens WHERE id = sqlc.arg(id);

-- name: ApiTokenRevoke :one
UPDATE api_tokens SET revoked_at = compute_now()
 WHERE id = sqlc.arg(id) AND revoked_at IS NULL
RETURNING id, tenant_id, identity, role, created_at, revoked_at, expires_at;
