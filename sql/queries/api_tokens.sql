-- name: ApiTokenCreate :one
-- expires_at NULL: the token never expires. issuer_id is the token that
-- asks for this one, recorded as issued_by (NULL: the system, e.g. compute
-- tokens create --database). Nothing is inserted (zero rows) when
--   * the issuer is unknown or revoked. Its chain of issuers (its issuer,
--     theirs, …), revoked ones included, is locked FOR SHARE from the top
--     down: a revoke of any of them with its descendants (which locks that
--     token FOR NO KEY UPDATE before it reads the descendants) either waits
--     for this insert to commit, and then sees the new token, or has
--     committed first, and then the issuer, one of its descendants, is
--     found revoked. A token above the issuer may be revoked on its own
--     (ApiTokenRevokeAlone): its descendants stay valid and may issue;
--   * the issuer has an expiry and the new token would outlive it, so
--     that an expiring token cannot mint a lasting one. Expiries never
--     change, so this check cannot go stale.
WITH RECURSIVE issuers (id, issued_by, depth) AS (
  SELECT i.id, i.issued_by, 0 FROM api_tokens i WHERE i.id = sqlc.narg(issuer_id)::text
  UNION ALL
  SELECT i.id, i.issued_by, c.depth + 1 FROM api_tokens i JOIN issuers c ON i.id = c.issued_by
), chain AS (
  SELECT i.id, i.expires_at, i.revoked_at, c.depth FROM api_tokens i JOIN issuers c ON c.id = i.id
   ORDER BY c.depth DESC
     FOR SHARE OF i
), issuer AS (
  SELECT c.expires_at FROM chain c WHERE c.depth = 0 AND c.revoked_at IS NULL
)
INSERT INTO api_tokens (id, token_hash, tenant_id, identity, role, expires_at, issued_by)
SELECT sqlc.arg(id)::text, sqlc.arg(token_hash)::bytea, sqlc.arg(tenant_id)::text, sqlc.arg(identity)::text,
       sqlc.arg(role)::text, sqlc.narg(expires_at)::timestamptz, sqlc.narg(issuer_id)::text
 WHERE (sqlc.narg(issuer_id)::text IS NULL OR EXISTS (SELECT 1 FROM issuer))
   AND NOT EXISTS (SELECT 1 FROM issuer i
                    WHERE i.expires_at IS NOT NULL
                      AND (sqlc.narg(expires_at)::timestamptz IS NULL
                           OR sqlc.narg(expires_at)::timestamptz > i.expires_at))
RETURNING id, tenant_id, identity, role, created_at, revoked_at, expires_at, issued_by;

-- name: ApiTokenByHash :one
-- The token a secret stands for, unless revoked or expired. db_now is the
-- business time of the lookup, so that a cache keeps the answer no longer
-- than until expires_at. suspended_reason is not NULL while the token's
-- tenant is suspended: the caller refuses the token (TENANT_SUSPENDED).
SELECT k.id, k.tenant_id, k.identity, k.role, k.expires_at, compute_now()::timestamptz AS db_now,
       t.suspended_reason
  FROM api_tokens k JOIN tenants t ON t.id = k.tenant_id
 WHERE k.token_hash = sqlc.arg(token_hash) AND k.revoked_at IS NULL
   AND (k.expires_at IS NULL OR k.expires_at > compute_now());

-- name: ApiTokenGet :one
SELECT id, tenant_id, identity, role, created_at, revoked_at, expires_at, issued_by FROM api_tokens WHERE id = sqlc.arg(id);

-- name: ApiTokenLockForRevoke :one
-- The first statement of a revoke: locks the token FOR NO KEY UPDATE (the
-- lock its UPDATE takes), which conflicts with the FOR SHARE an insert
-- under it takes on its issuers: such an insert commits before the next
-- statement, with a snapshot of its own, reads the descendants, or waits
-- until the revoke commits and then finds its issuer revoked.
SELECT id, tenant_id, identity, role, created_at, revoked_at, expires_at, issued_by FROM api_tokens
 WHERE id = sqlc.arg(id)
   FOR NO KEY UPDATE;

-- name: ApiTokenRevokeTree :many
-- Revokes the token and every token descending from it through issued_by
-- (the tokens it issued, theirs, …), those not revoked yet, and appends a
-- revoked change per token to authz_changes, all in this one statement.
-- The walk goes through tokens revoked before (on their own,
-- ApiTokenRevokeAlone), so a token's descendants can always be revoked
-- through it. The node join tokens the tree's tokens issued and nobody
-- used yet are revoked too, each with its revoked change: they would
-- otherwise join machines until they expire.
-- Rows are locked from the top down, so that two revokes in one tree wait
-- for each other instead of deadlocking; a row revoked by a revoke that
-- committed meanwhile is skipped. Returns the tokens revoked now.
WITH RECURSIVE tree (id, depth) AS (
  SELECT sqlc.arg(id)::text, 0
  UNION ALL
  SELECT c.id, t.depth + 1 FROM api_tokens c JOIN tree t ON c.issued_by = t.id
), locked AS (
  SELECT a.id FROM api_tokens a JOIN tree t ON t.id = a.id
   WHERE a.revoked_at IS NULL
   ORDER BY t.depth, a.id
     FOR NO KEY UPDATE OF a
), revoked AS (
  UPDATE api_tokens a SET revoked_at = compute_now()
    FROM locked l
   WHERE a.id = l.id
  RETURNING a.id, a.tenant_id, a.identity, a.role, a.created_at, a.revoked_at, a.expires_at, a.issued_by
), feed AS (
  INSERT INTO authz_changes (token_id, change) SELECT r.id, 'revoked' FROM revoked r
), joins AS (
  UPDATE node_join_tokens j SET revoked_at = compute_now()
   WHERE j.issued_by IN (SELECT t.id FROM tree t) AND j.used_at IS NULL AND j.revoked_at IS NULL
  RETURNING j.id
), joins_feed AS (
  INSERT INTO authz_changes (token_id, change) SELECT j.id, 'revoked' FROM joins j
)
SELECT id, tenant_id, identity, role, created_at, revoked_at, expires_at, issued_by FROM revoked;

-- name: ApiTokenRevokeAlone :many
-- Revokes the token on its own, if it is not revoked yet, and appends its
-- revoked change to authz_changes; the tokens it issued stay valid, and
-- stay its descendants (a later ApiTokenRevokeTree of it still reaches
-- them). Returns the token when it was revoked now.
WITH revoked AS (
  UPDATE api_tokens SET revoked_at = compute_now()
   WHERE id = sqlc.arg(id) AND revoked_at IS NULL
  RETURNING id, tenant_id, identity, role, created_at, revoked_at, expires_at, issued_by
), feed AS (
  INSERT INTO authz_changes (token_id, change) SELECT r.id, 'revoked' FROM revoked r
)
SELECT id, tenant_id, identity, role, created_at, revoked_at, expires_at, issued_by FROM revoked;
