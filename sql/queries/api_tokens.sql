-- name: ApiTokenCreate :one
-- expires_at NULL: the token never expires. issuer_id is the token that
-- asks for this one (NULL: the system, e.g. compute tokens create
-- --database). A token never outlives its issuer: when the issuer has an
-- expiry, the new token must expire no later, else nothing is inserted (zero
-- rows) — so that an expiring token cannot mint a lasting one. Expiries
-- never change, so the check cannot go stale.
INSERT INTO api_tokens (id, token_hash, tenant_id, identity, role, expires_at)
SELECT sqlc.arg(id)::text, sqlc.arg(token_hash)::bytea, sqlc.arg(tenant_id)::text, sqlc.arg(identity)::text,
       sqlc.arg(role)::text, sqlc.narg(expires_at)::timestamptz
 WHERE NOT EXISTS (SELECT 1 FROM api_tokens i
                    WHERE i.id = sqlc.narg(issuer_id)::text AND i.expires_at IS NOT NULL
                      AND (sqlc.narg(expires_at)::timestamptz IS NULL
                           OR sqlc.narg(expires_at)::timestamptz > i.expires_at))
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
