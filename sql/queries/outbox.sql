-- name: OutboxAppend :one
-- Appends one event inside the caller's transaction; returns its position.
INSERT INTO outbox (id, type, tenant_id, subject, data)
VALUES (sqlc.arg(id), sqlc.arg(type), sqlc.narg(tenant_id), sqlc.arg(subject), sqlc.arg(data))
RETURNING txid, seq, time;

-- name: OutboxAppendMany :many
-- Appends several events of one transaction in one statement, in the
-- order given: the arrays are unnested side by side, row by row, and the
-- insert takes the rows in that order, so seq (and the returned positions)
-- follow it. An empty tenant id is a fleet event (NULL).
INSERT INTO outbox (id, type, tenant_id, subject, data)
SELECT e.id, e.type, NULLIF(e.tenant_id, ''), e.subject, e.data
  FROM (SELECT unnest(sqlc.arg(ids)::uuid[]) AS id, unnest(sqlc.arg(types)::text[]) AS type,
               unnest(sqlc.arg(tenant_ids)::text[]) AS tenant_id, unnest(sqlc.arg(subjects)::text[]) AS subject,
               unnest(sqlc.arg(data)::jsonb[]) AS data) AS e
RETURNING txid, seq;

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

-- name: OutboxFrontierLag :one
-- How far the outbox frontier lags: readers see only rows below
-- pg_snapshot_xmin, which the oldest running transaction with an xid holds
-- back, in any database of the cluster. xids_behind counts the transaction
-- ids assigned since that frontier (xmax - xmin of the current snapshot, 0
-- when nothing holds it back). The oldest such transaction is named by its
-- xact_start (real time, the database server's clock); the caller turns it
-- into an age, so no real-clock read appears here. Seeing other roles'
-- sessions needs pg_read_all_stats (pg_monitor); without it they are absent.
SELECT (pg_snapshot_xmax(s.snap)::text::bigint - pg_snapshot_xmin(s.snap)::text::bigint)::bigint AS xids_behind,
       a.xact_start AS oldest_xact_start,
       a.pid AS holder_pid,
       coalesce(a.datname, '')::text AS holder_database,
       coalesce(a.application_name, '') AS holder_application,
       coalesce(a.state, '') AS holder_state
  FROM (SELECT pg_current_snapshot() AS snap) s
  LEFT JOIN LATERAL (
        SELECT p.xact_start, p.pid, p.datname, p.application_name, p.state
          FROM pg_catalog.pg_stat_activity p
         WHERE p.backend_xid IS NOT NULL
           AND p.pid <> pg_backend_pid()
         ORDER BY p.xact_start
         LIMIT 1) a ON true;

-- name: OutboxListen :exec
-- Subscribes this session to outbox pokes (outbox.Notifier sends them after
-- appending transactions commit).
LISTEN outbox;

-- name: OutboxNotify :exec
-- Pokes every session LISTENing on the outbox channel: sent by
-- outbox.Notifier on its own, outside any transaction, after appending
-- transactions committed. The payload is empty: a poke only says "read
-- again".
SELECT pg_notify('outbox', '');

-- name: OutboxSinkBacklog :one
-- What the API's command admission (httpapi.CommandAdmission) follows:
-- the visible head of the log (the last event below the frontier; 0/0 when
-- none) and the cursor of the slowest of sinks that saved its cursor
-- within active_seconds (has_slowest false when none did: sinks that
-- stopped are left out, slowing the API would not help them), and how
-- long the oldest due, unclaimed work item of kind work_kind (the webhook
-- deliveries) has waited for a worker: counted only while a worker runs
-- one, and while no webhook attempt in flight was started before
-- slow_started_seconds ago (a slot's until is its start plus hold_seconds).
-- Behind a slow receiver the wait is not the database's, and a tenant's
-- hanging endpoint must not be able to slow the API.
WITH f AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
     head AS (SELECT o.txid, o.seq FROM outbox o, f WHERE o.txid < f.xmin
               ORDER BY o.txid DESC, o.seq DESC LIMIT 1),
     slowest AS (SELECT c.txid, c.seq FROM outbox_cursors c
                  WHERE c.sink = ANY(sqlc.arg(sinks)::text[])
                    AND c.updated_at > compute_now() - make_interval(secs => sqlc.arg(active_seconds)::float8)
                  ORDER BY c.txid, c.seq LIMIT 1)
SELECT coalesce((SELECT txid FROM head), '0')::xid8 AS head_txid,
       coalesce((SELECT seq FROM head), 0)::bigint AS head_seq,
       EXISTS (SELECT 1 FROM slowest) AS has_slowest,
       coalesce((SELECT txid FROM slowest), '0')::xid8 AS slowest_txid,
       coalesce((SELECT seq FROM slowest), 0)::bigint AS slowest_seq,
       coalesce((SELECT extract(epoch FROM compute_now() - min(w.not_before))
                 FROM work_queue w
                WHERE w.kind = sqlc.arg(work_kind)::text AND w.not_before <= compute_now()
                  AND (w.claimed_until IS NULL OR w.claimed_until <= compute_now())
                  AND EXISTS (SELECT 1 FROM work_queue r
                               WHERE r.kind = sqlc.arg(work_kind)::text AND r.claimed_until > compute_now())
                  AND NOT EXISTS (SELECT 1 FROM webhook_inflight i
                                   WHERE i.until > compute_now()
                                     AND i.until < compute_now() + make_interval(secs =>
                                           sqlc.arg(hold_seconds)::float8 - sqlc.arg(slow_started_seconds)::float8))),
                0)::float8 AS delivery_wait_seconds;
