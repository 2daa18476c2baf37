-- name: SiteCreate :one
INSERT INTO sites (id, name) VALUES (sqlc.arg(id), sqlc.arg(name))
RETURNING id, name, version, created_at;

-- name: SiteGet :one
SELECT id, name, version, created_at FROM sites WHERE id = sqlc.arg(id);

-- name: SiteGetForUpdate :one
-- Locks a site for a rename. FOR NO KEY UPDATE, not FOR UPDATE: a pool
-- created in the site meanwhile takes FOR KEY SHARE on it (its foreign
-- key), which a change of the name must not block.
SELECT id, name, version, created_at FROM sites WHERE id = sqlc.arg(id) FOR NO KEY UPDATE;

-- name: SiteRename :one
-- Guarded by the version read under the lock: zero rows means someone else
-- changed the site first.
UPDATE sites SET name = sqlc.arg(name), version = version + 1
 WHERE id = sqlc.arg(id) AND version = sqlc.arg(version)
RETURNING id, name, version, created_at;
