-- name: TenantEnsure :exec
INSERT INTO tenants (id) VALUES (sqlc.arg(id)) ON CONFLICT (id) DO NOTHING;

-- name: TenantGet :one
SELECT id, created_at FROM tenants WHERE id = sqlc.arg(id);

-- name: TenantLock :exec
-- Serialises the writes a per-tenant cap guards (webhook endpoints, webhook
-- in-flight slots). NO KEY UPDATE, so foreign-key checks of rows that
-- reference the tenant (FOR KEY SHARE) are not blocked.
SELECT id FROM tenants WHERE id = sqlc.arg(id) FOR NO KEY UPDATE;
