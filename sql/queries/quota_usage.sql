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

-- name: QuotaUsageChargeMany :many
-- Rule 5 for every resource of a request in one guarded statement: a row is
-- charged only when it stays within max, and the resources charged are
-- returned. Fewer than asked is QUOTA_EXCEEDED and the caller rolls back
-- (the whole create, or a model quota's placement attempt to its
-- savepoint). The rows are locked already, in resource order
-- (QuotaUsageLockForCharge), so this takes no lock of its own.
UPDATE quota_usage q SET used = q.used + c.amount
  FROM (SELECT unnest(sqlc.arg(resources)::text[]) AS resource,
               unnest(sqlc.arg(amounts)::bigint[]) AS amount) AS c
 WHERE q.tenant_id = sqlc.arg(tenant_id) AND q.resource = c.resource
   AND q.used + c.amount <= q.max
RETURNING q.resource;

-- name: QuotaUsageRefundMany :many
-- Gives back a reservation's charges in one statement; the rows are locked
-- already (the ends lock them first). A resource missing from the result
-- had no row or less used than the charge: the caller fails.
UPDATE quota_usage q SET used = q.used - c.amount
  FROM (SELECT unnest(sqlc.arg(resources)::text[]) AS resource,
               unnest(sqlc.arg(amounts)::bigint[]) AS amount) AS c
 WHERE q.tenant_id = sqlc.arg(tenant_id) AND q.resource = c.resource
   AND q.used - c.amount >= 0
RETURNING q.resource;
