-- name: PriorityClassCreate :one
-- A name that exists inserts nothing: zero rows is CONFLICT. A second
-- default class breaks priority_classes_one_default (CONFLICT too).
INSERT INTO priority_classes (name, value, preemptible, grace_seconds, description, is_default, created_by)
VALUES (sqlc.arg(name), sqlc.arg(value), sqlc.arg(preemptible), sqlc.arg(grace_seconds), sqlc.arg(description),
        sqlc.arg(is_default), sqlc.arg(created_by))
ON CONFLICT (name) DO NOTHING
RETURNING name, value, preemptible, grace_seconds, description, is_default, created_by, version, created_at;

-- name: PriorityClassGet :one
SELECT name, value, preemptible, grace_seconds, description, is_default, created_by, version, created_at
  FROM priority_classes WHERE name = sqlc.arg(name);

-- name: PriorityClassDefault :many
-- The default class, if there is one (at most one row).
SELECT name FROM priority_classes WHERE is_default;

-- name: PriorityClassList :many
-- A keyset page in name order.
SELECT name, value, preemptible, grace_seconds, description, is_default, created_by, version, created_at
  FROM priority_classes
 WHERE name > sqlc.arg(after_name)::text
 ORDER BY name
 LIMIT sqlc.arg(max_rows);

-- name: PriorityClassNamesExisting :many
-- Which of names are classes.
SELECT name FROM priority_classes WHERE name = ANY(sqlc.arg(names)::text[]) ORDER BY name;

-- name: TenantPriorityClassesGet :one
-- A tenant's allow-list as a whole: the classes named (in name order), the
-- version of the set (0 before it was first set) and the default class,
-- which every tenant may use. No row: no such tenant.
SELECT t.id AS tenant_id, coalesce(s.version, 0)::bigint AS version,
       coalesce((SELECT array_agg(c.class ORDER BY c.class) FROM tenant_priority_classes c WHERE c.tenant_id = t.id),
                '{}')::text[] AS classes,
       coalesce((SELECT d.name FROM priority_classes d WHERE d.is_default), '')::text AS default_class
  FROM tenants t LEFT JOIN tenant_priority_class_sets s ON s.tenant_id = t.id
 WHERE t.id = sqlc.arg(tenant_id);

-- name: TenantPriorityClassSetBump :one
-- Writes the next version of a tenant's set, guarded by the version read
-- under the tenant's lock (0: no set yet). Zero rows: changed concurrently.
INSERT INTO tenant_priority_class_sets AS s (tenant_id, version) VALUES (sqlc.arg(tenant_id), 1)
ON CONFLICT (tenant_id) DO UPDATE SET version = s.version + 1, updated_at = compute_now()
 WHERE s.version = sqlc.arg(version)
RETURNING version;

-- name: TenantPriorityClassesClear :exec
DELETE FROM tenant_priority_classes WHERE tenant_id = sqlc.arg(tenant_id);

-- name: TenantPriorityClassesAdd :exec
INSERT INTO tenant_priority_classes (tenant_id, class)
SELECT sqlc.arg(tenant_id), unnest(sqlc.arg(classes)::text[]);
