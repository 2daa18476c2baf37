-- name: QuotaUsageCharge :execrows
-- Rule 5: zero rows is QUOTA_EXCEEDED (or no quota for the resource).
UPDATE quota_usage SET used = used + sqlc.arg(amount)::bigint
 WHERE tenant_id = sqlc.arg(tenant_id) AND resource = sqlc.arg(resource)
   AND used + sqlc.arg(amount)::bigint <= max;

-- name: QuotaUsageLockForCharge :many
-- quota_usage first in the lock order: the rows a create or placement may
-- charge, locked in resource order before any pool, node or device: the
-- named resources and, when with_models, every per-model GPU quota of the
-- tenant (the model is known only once a node is chosen).
SELECT resource FROM quota_usage
 WHERE tenant_id = sqlc.arg(tenant_id)
   AND (resource = ANY(sqlc.arg(resources)::text[])
        OR (sqlc.arg(with_models)::bool AND resource LIKE 'gpu:%'))
 ORDER BY resource FOR UPDATE;

-- name: QuotaUsageRefund :execrows
UPDATE quota_usage SET used = used - sqlc.arg(amount)::bigint
 WHERE tenant_id = sqlc.arg(tenant_id) AND resource = sqlc.arg(resource)
   AND used - sqlc.arg(amount)::bigint >= 0;

-- name: QuotaUsageSetMax :many
-- Sets a quota; zero rows when the new max is below what is already used
-- (quotas.set refuses that with CONFLICT rather than breaking used <= max).
INSERT INTO quota_usage AS q (tenant_id, resource, max)
VALUES (sqlc.arg(tenant_id), sqlc.arg(resource), sqlc.arg(max))
ON CONFLICT (tenant_id, resource) DO UPDATE SET max = EXCLUDED.max, version = q.version + 1
 WHERE q.used <= EXCLUDED.max
RETURNING tenant_id, resource, used, max, version;

-- name: QuotaUsageGet :one
SELECT tenant_id, resource, used, max, version FROM quota_usage
 WHERE tenant_id = sqlc.arg(tenant_id) AND resource = sqlc.arg(resource);

-- name: QuotaUsageList :many
SELECT tenant_id, resource, used, max, version FROM quota_usage
 WHERE tenant_id = sqlc.arg(tenant_id) ORDER BY resource;
