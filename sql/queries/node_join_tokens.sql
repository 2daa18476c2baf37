-- name: NodeJoinTokenCreate :one
-- issuer_id is the API token asking for it, recorded as issued_by (NULL:
-- the system). Nothing is inserted (zero rows) when that token is unknown
-- or revoked, or has an expiry the join token would outlive: as a token
-- never outlives the token that issues it (ApiTokenCreate), an expiring
-- operator token cannot mint a join token that admits a machine after it
-- expired. Its chain of issuers is locked FOR SHARE from the top down,
-- as ApiTokenCreate locks it, so a revoke of any of them with its
-- descendants (ApiTokenRevokeTree, which revokes their unused join tokens
-- too) either waits for this insert and then revokes the new join token,
-- or has committed first, and then this insert finds its issuer revoked.
WITH RECURSIVE issuers (id, issued_by, depth) AS (
  SELECT i.id, i.issued_by, 0 FROM api_tokens i WHERE i.id = sqlc.narg(issuer_id)::text
  UNION ALL
  SELECT i.id, i.issued_by, c.depth + 1 FROM api_tokens i JOIN issuers c ON i.id = c.issued_by
), chain AS (
  SELECT i.id, i.expires_at, i.revoked_at, c.depth FROM api_tokens i JOIN issuers c ON c.id = i.id
   ORDER BY c.depth DESC
     FOR SHARE OF i
)
INSERT INTO node_join_tokens (id, node_id, token_hash, tenant_id, identity, expires_at, issued_by)
SELECT sqlc.arg(id)::text, sqlc.arg(node_id)::text, sqlc.arg(token_hash)::bytea, sqlc.arg(tenant_id)::text,
       sqlc.arg(identity)::text, compute_now() + make_interval(secs => sqlc.arg(ttl_seconds)::float8),
       sqlc.narg(issuer_id)::text
 WHERE sqlc.narg(issuer_id)::text IS NULL
    OR EXISTS (SELECT 1 FROM chain c
                WHERE c.depth = 0 AND c.revoked_at IS NULL
                  AND (c.expires_at IS NULL
                       OR compute_now() + make_interval(secs => sqlc.arg(ttl_seconds)::float8) <= c.expires_at))
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
