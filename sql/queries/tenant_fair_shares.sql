-- name: TenantFairShareCurrent :one
-- A tenant's share as the set command starts from: the share (1 when an
-- operator never set one) and its version (0 then). No row: no such tenant.
SELECT t.id AS tenant_id, coalesce(f.share, 1)::int AS share, coalesce(f.version, 0)::bigint AS version
  FROM tenants t LEFT JOIN tenant_fair_shares f ON f.tenant_id = t.id
 WHERE t.id = sqlc.arg(tenant_id);

-- name: TenantFairShareSet :one
-- Writes a tenant's new share at the next version, guarded by the version
-- read under the tenant's lock (0: never set). Zero rows: changed
-- concurrently.
INSERT INTO tenant_fair_shares AS f (tenant_id, share, version) VALUES (sqlc.arg(tenant_id), sqlc.arg(share), 1)
ON CONFLICT (tenant_id) DO UPDATE SET share = EXCLUDED.share, version = f.version + 1, updated_at = compute_now()
 WHERE f.version = sqlc.arg(version)
RETURNING version;

-- name: TenantFairShareGet :one
-- A tenant's share, its version and its decayed GPU usage now
-- (fair_share_usage, with the half-life in seconds), for GET
-- /v1/tenants/{tenant}/fair-share. No row: no such tenant.
SELECT t.id AS tenant_id, coalesce(f.share, 1)::int AS share, coalesce(f.version, 0)::bigint AS version,
       (SELECT u.gpu_hours FROM fair_share_usage(ARRAY[t.id], sqlc.arg(half_life_seconds)::float8) AS u (tenant_id, gpu_hours))::float8 AS usage_gpu_hours,
       compute_now()::timestamptz AS as_of
  FROM tenants t LEFT JOIN tenant_fair_shares f ON f.tenant_id = t.id
 WHERE t.id = sqlc.arg(tenant_id);


-- name: FairShareFold :one
-- Moves the settled fair-share totals of a half-life to compute_now() −
-- margin (fair_share_fold, migration 0052) and returns that watermark;
-- rebuilt when they were computed in full (the first fold, or after ten
-- half-lives without one).
SELECT f.settled_at::timestamptz AS settled_at, f.rebuilt::boolean AS rebuilt
  FROM fair_share_fold(sqlc.arg(half_life_seconds)::float8, sqlc.arg(margin_seconds)::float8) AS f (settled_at, rebuilt);
