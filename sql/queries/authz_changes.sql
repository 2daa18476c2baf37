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
