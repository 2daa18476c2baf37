-- name: AuthzChangeAppend :exec
INSERT INTO authz_changes (token_id, change) VALUES (sqlc.arg(token_id), sqlc.arg(change));

-- name: AuthzChangesAfter :many
-- Same cursor shape as the outbox reader: nothing can appear behind it.
SELECT c.txid, c.seq, c.token_id, c.change FROM authz_changes c
 WHERE c.txid < pg_snapshot_xmin(pg_current_snapshot())
   AND (c.txid, c.seq) > (sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint)
 ORDER BY c.txid, c.seq
 LIMIT sqlc.arg(max_rows);

-- name: AuthzChangesFrontier :one
-- Where a fresh cache starts tailing: the newest visible change.
SELECT c.txid, c.seq FROM authz_changes c
 WHERE c.txid < pg_snapshot_xmin(pg_current_snapshot())
 ORDER BY c.txid DESC, c.seq DESC
 LIMIT 1;

-- name: AuthzChangeAppendTenant :many
-- Appends change ('suspended' or 'resumed') for every token of the tenant
-- that is neither revoked nor expired, and returns their ids: what every
-- API process drops from its cache, and whose event streams end.
INSERT INTO authz_changes (token_id, change)
SELECT k.id, sqlc.arg(change)::text FROM api_tokens k
 WHERE k.tenant_id = sqlc.arg(tenant_id) AND k.revoked_at IS NULL
   AND (k.expires_at IS NULL OR k.expires_at > compute_now())
RETURNING token_id;
