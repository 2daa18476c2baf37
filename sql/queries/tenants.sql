-- name: TenantEnsure :exec
INSERT INTO tenants (id) VALUES (sqlc.arg(id)) ON CONFLICT (id) DO NOTHING;

-- name: TenantGet :one
SELECT id, created_at FROM tenants WHERE id = sqlc.arg(id);
