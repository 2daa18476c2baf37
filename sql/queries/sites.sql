-- name: SiteCreate :one
INSERT INTO sites (id, name) VALUES (sqlc.arg(id), sqlc.arg(name))
RETURNING id, name, version, created_at;

-- name: SiteGet :one
SELECT id, name, version, created_at FROM sites WHERE id = sqlc.arg(id);
