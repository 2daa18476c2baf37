-- name: NodeCredentialCreate :exec
INSERT INTO node_credentials (id, node_id, token_hash)
VALUES (sqlc.arg(id), sqlc.arg(node_id), sqlc.arg(token_hash));

-- name: NodeCredentialAuthenticate :one
-- A live credential and the node it speaks for. Retired nodes have every
-- credential revoked, so they cannot authenticate.
SELECT c.id, c.node_id FROM node_credentials c
 WHERE c.token_hash = sqlc.arg(token_hash) AND c.revoked_at IS NULL;

-- name: NodeCredentialRevokeAll :execrows
UPDATE node_credentials SET revoked_at = compute_now()
 WHERE node_id = sqlc.arg(node_id) AND revoked_at IS NULL;
