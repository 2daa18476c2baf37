-- name: NodeJoinTokenCreate :one
INSERT INTO node_join_tokens (id, node_id, token_hash, tenant_id, identity, expires_at)
VALUES (sqlc.arg(id), sqlc.arg(node_id), sqlc.arg(token_hash), sqlc.arg(tenant_id), sqlc.arg(identity),
        compute_now() + make_interval(secs => sqlc.arg(ttl_seconds)::float8))
RETURNING expires_at;

-- name: NodeJoinTokenCheck :one
-- A join token usable now for this node: unused and unexpired. Only a
-- check; the join consumes it (NodeJoinTokenConsume) in its transaction.
SELECT id, tenant_id, identity FROM node_join_tokens
 WHERE token_hash = sqlc.arg(token_hash) AND node_id = sqlc.arg(node_id)
   AND used_at IS NULL AND expires_at > compute_now();

-- name: NodeJoinTokenConsume :execrows
-- Uses the token up in the join's transaction. A concurrent second use
-- waits for the first and then matches nothing.
UPDATE node_join_tokens SET used_at = compute_now(), credential_id = sqlc.arg(credential_id)::text
 WHERE token_hash = sqlc.arg(token_hash) AND node_id = sqlc.arg(node_id)
   AND used_at IS NULL AND expires_at > compute_now();
