-- name: OutboxAppend :one
-- Appends one event inside the caller's transaction; returns its position.
INSERT INTO outbox (id, type, tenant_id, subject, data)
VALUES (sqlc.arg(id), sqlc.arg(type), sqlc.narg(tenant_id), sqlc.arg(subject), sqlc.arg(data))
RETURNING txid, seq, time;

-- name: OutboxReadAfter :many
-- The snapshot-xmin reader: only rows older than every running transaction,
-- strictly after the cursor, as a keyset scan on (txid, seq).
SELECT id, txid, seq, type, tenant_id, subject, data, time
  FROM outbox o
 WHERE o.txid < pg_snapshot_xmin(pg_current_snapshot())
   AND (o.txid, o.seq) > (sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint)
 ORDER BY o.txid, o.seq
 LIMIT sqlc.arg(max_rows);

-- name: OutboxGet :one
SELECT id, txid, seq, type, tenant_id, subject, data, time FROM outbox WHERE id = sqlc.arg(id);

-- name: OutboxCursorGet :one
SELECT sink, txid, seq FROM outbox_cursors WHERE sink = sqlc.arg(sink);

-- name: OutboxCursorSave :exec
INSERT INTO outbox_cursors (sink, txid, seq, updated_at)
VALUES (sqlc.arg(sink), sqlc.arg(txid), sqlc.arg(seq), compute_now())
ON CONFLICT (sink) DO UPDATE SET txid = EXCLUDED.txid, seq = EXCLUDED.seq, updated_at = EXCLUDED.updated_at;
