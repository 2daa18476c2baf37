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
-- (quotas.set refuses that with CONFLICT rather than breaking used <= max),
-- when it is the max the quota already has (a no-op: no new version), and
-- when if_version is not 0 and the quota is not at that version (If-Match:
-- CONFLICT). The version is compared here, on the row ON CONFLICT has
-- locked, so two writers holding the same version cannot both succeed.
-- With an if_version nothing is inserted: a quota that is not set has no
-- version to match. Either way ON CONFLICT has locked an existing row, so
-- the caller's next read of it in the transaction tells the cases apart
-- exactly.
INSERT INTO quota_usage AS q (tenant_id, resource, max)
SELECT sqlc.arg(tenant_id)::text, sqlc.arg(resource)::text, sqlc.arg(max)::bigint
 WHERE sqlc.arg(if_version)::bigint = 0
    OR EXISTS (SELECT 1 FROM quota_usage e
                WHERE e.tenant_id = sqlc.arg(tenant_id) AND e.resource = sqlc.arg(resource))
ON CONFLICT (tenant_id, resource) DO UPDATE SET max = EXCLUDED.max, version = q.version + 1
 WHERE q.used <= EXCLUDED.max AND q.max IS DISTINCT FROM EXCLUDED.max
   AND (sqlc.arg(if_version)::bigint = 0 OR q.version = sqlc.arg(if_version)::bigint)
RETURNING tenant_id, resource, used, max, version;

-- name: QuotaUsageGet :one
SELECT tenant_id, resource, used, max, version FROM quota_usage
 WHERE tenant_id = sqlc.arg(tenant_id) AND resource = sqlc.arg(resource);

-- name: QuotaUsageGetForUpdate :one
-- The quota as it is now, locked: what quotas.set reads to say why its
-- guarded statement changed nothing when that statement may not have
-- locked the row (an If-Match on a quota its snapshot did not see).
SELECT tenant_id, resource, used, max, version FROM quota_usage
 WHERE tenant_id = sqlc.arg(tenant_id) AND resource = sqlc.arg(resource)
 FOR UPDATE;

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

-- name: QuotaUsageLockAndCharge :many
-- QuotaUsageLockForCharge and QuotaUsageChargeMany as one statement, for a
-- create: every row the request may charge is locked first, in resource
-- order (the locked CTE runs to completion before the update takes a row,
-- as the update's filter reads it), then the request's resources are
-- charged where they stay within max. Each locked row comes back with
-- whether it was charged; a resource of the request that is missing, or
-- not charged, is QUOTA_EXCEEDED.
WITH locked AS (
  SELECT u.resource FROM quota_usage u
   WHERE u.tenant_id = sqlc.arg(tenant_id)
     AND (u.resource = ANY(sqlc.arg(resources)::text[])
          OR (sqlc.arg(with_models)::bool AND u.resource LIKE 'gpu:%'))
   ORDER BY u.resource FOR UPDATE
), charged AS (
  UPDATE quota_usage q SET used = q.used + c.amount
    FROM (SELECT unnest(sqlc.arg(resources)::text[]) AS resource,
                 unnest(sqlc.arg(amounts)::bigint[]) AS amount) AS c
   WHERE q.tenant_id = sqlc.arg(tenant_id) AND q.resource = c.resource
     AND q.resource IN (SELECT resource FROM locked)
     AND q.used + c.amount <= q.max
  RETURNING q.resource
)
SELECT l.resource::text AS resource, (ch.resource IS NOT NULL)::bool AS charged
  FROM locked l LEFT JOIN charged ch ON ch.resource = l.resource
 ORDER BY l.resource;

-- name: QuotaUsageLockAndRefund :many
-- The refund of an end as one statement: the rows to refund locked first,
-- in resource order (quota_usage first in the lock order), then each
-- given back where it does not go below zero. The resources refunded come
-- back; a missing one is a quota row missing or below the charge.
WITH locked AS (
  SELECT u.resource FROM quota_usage u
   WHERE u.tenant_id = sqlc.arg(tenant_id) AND u.resource = ANY(sqlc.arg(resources)::text[])
   ORDER BY u.resource FOR UPDATE
)
UPDATE quota_usage q SET used = q.used - c.amount
  FROM (SELECT unnest(sqlc.arg(resources)::text[]) AS resource,
               unnest(sqlc.arg(amounts)::bigint[]) AS amount) AS c
 WHERE q.tenant_id = sqlc.arg(tenant_id) AND q.resource = c.resource
   AND q.resource IN (SELECT resource FROM locked)
   AND q.used - c.amount >= 0
RETURNING q.resource;
