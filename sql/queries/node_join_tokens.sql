-- name: NodeJoinTokenCreate :one
INSERT INTO node_join_tokens (id, node_id, token_hash, tenant_id, identity, expires_at)
VALUES (sqlc.arg(id), sqlc.arg(node_id), sqlc.arg(token_hash), sqlc.arg(tenant_id), sqlc.arg(identity),
        compute_now() + make_interval(secs => sqlc.arg(ttl_seconds)::float8))
RETURNING expires_at;

-- name: NodeJoinTokenCheck :one
-- A join token usable now for this node: unused, unrevoked and unexpired.
-- Only a check; the join consumes it (NodeJoinTokenConsume) in its
-- transaction.
SELECT id, tenant_id, identity FROM node_join_tokens
 WHERE token_hash = sqlc.arg(token_hash) AND node_id = sqlc.arg(node_id)
   AND used_at IS NULL AND revoked_at IS NULL AND expires_at > compute_now();

-- name: NodeJoinTokenConsume :one
-- Uses the token up in the join's transaction and returns its id. A
-- concurrent second use, or a revocation, waits for the first and then
-- matches nothing.
UPDATE node_join_tokens SET used_at = compute_now(), credential_id = sqlc.arg(credential_id)::text
 WHERE token_hash = sqlc.arg(token_hash) AND node_id = sqlc.arg(node_id)
   AND used_at IS NULL AND revoked_at IS NULL AND expires_at > compute_now()
RETURNING id;

-- name: NodeJoinTokenRevoke :execrows
-- Revokes a token of the node that was neither used nor revoked yet
-- (expired or not). Zero rows: unknown, used, or revoked before
-- (NodeJoinTokenGet tells which).
UPDATE node_join_tokens SET revoked_at = compute_now()
 WHERE id = sqlc.arg(id) AND node_id = sqlc.arg(node_id) AND used_at IS NULL AND revoked_at IS NULL;

-- name: NodeJoinTokenGet :one
SELECT id, node_id, expires_at, used_at, revoked_at FROM node_join_tokens
 WHERE id = sqlc.arg(id) AND node_id = sqlc.arg(node_id);
