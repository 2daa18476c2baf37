-- name: ApiTokenCreate :one
INSERT INTO api_tokens (id, token_hash, tenant_id, identity, role)
VALUES (sqlc.arg(id), sqlc.arg(token_hash), sqlc.arg(tenant_id), sqlc.arg(identity), sqlc.arg(role))
RETURNING id, tenant_id, identity, role, created_at, revoked_at;

-- name: ApiTokenByHash :one
SELECT id, tenant_id, identity, role FROM api_tokens
 WHERE token_hash = sqlc.arg(token_hash) AND revoked_at IS NULL;

-- name: ApiTokenGet :one
SELECT id, tenant_id, identity, role, created_at, revoked_at FROM api_tokens WHERE id = sqlc.arg(id);

-- name: ApiTokenRevoke :one
UPDATE api_tokens SET revoked_at = compute_now()
 WHERE id = sqlc.arg(id) AND revoked_at IS NULL
RETURNING id, tenant_id, identity, role, created_at, revoked_at;
