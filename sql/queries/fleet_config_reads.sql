-- Reads of the fleet's configuration and of identity for the read API
-- (queries/sites.go, pools.go, tenants.go, tokens.go). These tables have no
-- read model: they are small, written rarely, and read here with plain
-- MVCC SELECTs that take no row lock, so they never wait on a command.
-- Lists are keyset pages: after the key of the previous page's last row.

-- name: SiteList :many
SELECT id, name, version, created_at FROM sites
 WHERE id > sqlc.arg(after_id)::text
 ORDER BY id
 LIMIT sqlc.arg(max_rows);

-- name: PoolList :many
-- site_id NULL: every site's pools.
SELECT id, site_id, kind, lost_after_seconds, cpu_ratio::float8 AS cpu_ratio,
       memory_ratio::float8 AS memory_ratio, disk_ratio::float8 AS disk_ratio, workload_network, version, created_at
  FROM pools
 WHERE (sqlc.narg(site_id)::text IS NULL OR site_id = sqlc.narg(site_id)::text)
   AND id > sqlc.arg(after_id)::text
 ORDER BY id
 LIMIT sqlc.arg(max_rows);

-- name: TenantList :many
-- only_id NULL: every tenant (operators); else that tenant alone.
SELECT id, created_at, suspended_at, suspended_reason FROM tenants
 WHERE (sqlc.narg(only_id)::text IS NULL OR id = sqlc.narg(only_id)::text)
   AND id > sqlc.arg(after_id)::text
 ORDER BY id
 LIMIT sqlc.arg(max_rows);

-- name: QuotaUsagePage :many
SELECT tenant_id, resource, used, max, version FROM quota_usage
 WHERE tenant_id = sqlc.arg(tenant_id) AND resource > sqlc.arg(after_resource)::text
 ORDER BY resource
 LIMIT sqlc.arg(max_rows);

-- name: ApiTokenList :many
-- Token metadata, never the hash, in creation order (id breaks ties).
-- tenant_id NULL: every tenant. created_at is the issuing transaction's
-- start, so a token issued while a client pages may land behind its cursor:
-- list again to see it.
SELECT id, tenant_id, identity, role, created_at, revoked_at, expires_at, issued_by FROM api_tokens
 WHERE (sqlc.narg(tenant_id)::text IS NULL OR tenant_id = sqlc.narg(tenant_id)::text)
   AND (created_at, id) > (sqlc.arg(after_created_at)::timestamptz, sqlc.arg(after_id)::text)
 ORDER BY created_at, id
 LIMIT sqlc.arg(max_rows);

-- name: ReservationDetailGet :one
-- What a reservation's GET adds to its read model: the request it was made
-- from and what it charged (the write model alone has the charges: placement
-- adds the per-model GPU quota it charged, and no event carries them), and
-- its allocation, if it was ever placed (at most one per reservation).
SELECT r.spec, r.charges, a.id AS allocation_id, a.node_id AS allocation_node_id,
       a.device_ids AS allocation_device_ids, a.vcpu AS allocation_vcpu, a.memory AS allocation_memory,
       a.disk AS allocation_disk, a.created_at AS allocation_created_at, a.released_at AS allocation_released_at
  FROM reservations r
  LEFT JOIN allocations a ON a.reservation_id = r.id
 WHERE r.id = sqlc.arg(id)
 ORDER BY a.created_at DESC NULLS LAST, a.id
 LIMIT 1;
