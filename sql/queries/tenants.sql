-- name: TenantEnsure :exec
INSERT INTO tenants (id) VALUES (sqlc.arg(id)) ON CONFLICT (id) DO NOTHING;

-- name: TenantGet :one
SELECT id, created_at, suspended_at, suspended_reason FROM tenants WHERE id = sqlc.arg(id);

-- name: TenantLock :exec
-- Serialises the writes a per-tenant cap guards (webhook endpoints, webhook
-- in-flight slots). NO KEY UPDATE, so foreign-key checks of rows that
-- reference the tenant (FOR KEY SHARE) are not blocked.
SELECT id FROM tenants WHERE id = sqlc.arg(id) FOR NO KEY UPDATE;

-- name: TenantLockForSuspension :one
-- The first statement of a suspend or resume: the tenant row FOR UPDATE,
-- the one lock that conflicts with the FOR KEY SHARE of the suspension
-- guard (tenant_refuse_suspended, migration 0065) and of the foreign keys
-- of new tokens: a create or a token insert in flight commits first, and
-- the suspend's next statements see it, or waits for the suspend and then
-- sees the tenant suspended.
SELECT id, suspended_at, suspended_reason, suspension_version FROM tenants
 WHERE id = sqlc.arg(id)
   FOR UPDATE;

-- name: TenantSuspend :one
-- Suspends a tenant that is not suspended; zero rows when it is.
UPDATE tenants SET suspended_at = compute_now(), suspended_reason = sqlc.arg(reason)::text,
       suspension_version = suspension_version + 1
 WHERE id = sqlc.arg(id) AND suspended_at IS NULL
RETURNING suspended_at, suspension_version;

-- name: TenantResume :one
-- Resumes a suspended tenant; zero rows when it is not suspended.
UPDATE tenants SET suspended_at = NULL, suspended_reason = NULL, suspension_version = suspension_version + 1
 WHERE id = sqlc.arg(id) AND suspended_at IS NOT NULL
RETURNING suspension_version;

-- name: TenantSuspensionGet :one
-- Whether a tenant is suspended, and why (NULL: it is not).
SELECT id, suspended_at, suspended_reason, suspension_version FROM tenants WHERE id = sqlc.arg(id);

-- name: TenantOperatorTokenCount :one
-- The tenant's valid operator tokens: the tenant that holds the operators'
-- tokens cannot be suspended, or nobody could resume it.
SELECT count(*)::bigint FROM api_tokens
 WHERE tenant_id = sqlc.arg(tenant_id) AND role = 'operator' AND revoked_at IS NULL
   AND (expires_at IS NULL OR expires_at > compute_now());
