-- name: InstanceInsert :one
INSERT INTO instances (id, tenant_id, reservation_id, allocation_id, node_id, spec, state)
VALUES (sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(reservation_id), sqlc.arg(allocation_id), sqlc.arg(node_id),
        sqlc.arg(spec), 'requested')
RETURNING *;

-- name: InstanceGet :one
SELECT * FROM instances WHERE id = sqlc.arg(id);

-- name: InstanceGetForUpdate :one
-- FOR NO KEY UPDATE: node commands that reference the instance check their
-- foreign key with FOR KEY SHARE, which this must not block.
SELECT * FROM instances WHERE id = sqlc.arg(id) FOR NO KEY UPDATE;

-- name: InstanceUpdateState :execrows
-- Guarded by version: zero rows means someone else moved it first.
UPDATE instances SET state = sqlc.arg(state), reason = sqlc.arg(reason), version = version + 1,
       updated_at = compute_now()
 WHERE id = sqlc.arg(id) AND version = sqlc.arg(version);
