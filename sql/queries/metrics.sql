-- Domain metrics (internal/metrics, docs/operations/observability.md): the
-- few small statements a /metrics scrape runs, at most once per cache
-- period and under a short timeout, in one read-only transaction. Each one
-- reads an index or a small table; the only whole-table counts (finished
-- reservations) run less often. Ages are measured on compute_now(), so a
-- simulated clock moves them.

-- name: MetricsOutboxHead :many
-- The newest event the readers may see (below the snapshot frontier): a
-- backward scan of outbox_position that skips the few rows of transactions
-- still ahead of the frontier. No row when the log is empty.
SELECT o.txid, o.seq,
       extract(epoch FROM compute_now() - o.time)::float8 AS age_seconds
  FROM outbox o
 WHERE o.txid < pg_snapshot_xmin(pg_current_snapshot())
 ORDER BY o.txid DESC, o.seq DESC
 LIMIT 1;

-- name: MetricsOutboxSinkLag :many
-- Each durable sink's cursor against the log: how many visible events lie
-- after it (counted up to max_count, so a sink far behind costs a bounded
-- scan) and how old the first of them is (0 when the sink is caught up).
WITH f AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
SELECT c.sink,
       (SELECT count(*) FROM (SELECT 1 FROM outbox o, f
                               WHERE o.txid < f.xmin AND (o.txid, o.seq) > (c.txid, c.seq)
                               LIMIT sqlc.arg(max_count)::bigint) behind)::bigint AS behind,
       coalesce((SELECT extract(epoch FROM compute_now() - o.time) FROM outbox o, f
                  WHERE o.txid < f.xmin AND (o.txid, o.seq) > (c.txid, c.seq)
                  ORDER BY o.txid, o.seq LIMIT 1), 0)::float8 AS oldest_age_seconds
  FROM outbox_cursors c
 ORDER BY c.sink;

-- name: MetricsWorkQueue :many
-- Work-queue rows by kind: all of them, those running (claimed), those due
-- and waiting for a worker, and how long the oldest waiting one has been
-- due.
SELECT kind,
       count(*)::bigint AS items,
       count(*) FILTER (WHERE claimed_until > compute_now())::bigint AS running,
       count(*) FILTER (WHERE not_before <= compute_now()
                          AND (claimed_until IS NULL OR claimed_until <= compute_now()))::bigint AS due,
       coalesce(extract(epoch FROM compute_now() - min(not_before) FILTER (
                  WHERE not_before <= compute_now()
                    AND (claimed_until IS NULL OR claimed_until <= compute_now()))), 0)::float8 AS oldest_due_age_seconds
  FROM work_queue
 GROUP BY kind
 ORDER BY kind;

-- name: MetricsLeasesHeld :many
-- The leases held at this moment (not expired), with their holders.
SELECT name, owner, epoch,
       extract(epoch FROM expires_at - compute_now())::float8 AS expires_in_seconds
  FROM leases
 WHERE expires_at > compute_now()
 ORDER BY name;

-- name: MetricsReservationsLive :many
-- Live reservations by state, from the partial index reservations_live.
SELECT state, count(*)::bigint AS n
  FROM reservations
 WHERE state IN ('pending', 'booked', 'active')
 GROUP BY state;

-- name: MetricsReservationsFinished :many
-- Finished reservations by state: they are kept for ever, so this is a
-- whole-table count, run less often than the rest.
SELECT state, count(*)::bigint AS n
  FROM reservations
 WHERE state NOT IN ('pending', 'booked', 'active')
 GROUP BY state;

-- name: MetricsNodesByState :many
-- Nodes by liveness state (nodes.state).
SELECT state, count(*)::bigint AS n FROM nodes GROUP BY state;

-- name: MetricsWebhookAttemptsLastID :one
-- Where the webhook attempt counter starts: the newest attempt so far.
SELECT coalesce(max(id), 0)::bigint AS id FROM webhook_attempts;

-- name: MetricsWebhookAttemptsAfter :many
-- Webhook attempts recorded after after_id, by outcome: a range scan of the
-- primary key. The outcome is the response's status class, or the kind of
-- failure when no response came (webhook_attempts.error holds one of the
-- fixed texts of webhook.publicAttemptError).
SELECT (CASE
          WHEN status BETWEEN 200 AND 299 THEN 'success'
          WHEN status BETWEEN 400 AND 499 THEN 'http_4xx'
          WHEN status BETWEEN 500 AND 599 THEN 'http_5xx'
          WHEN status IS NOT NULL THEN 'http_other'
          WHEN error = 'timeout' THEN 'timeout'
          ELSE 'connection_error'
        END)::text AS outcome,
       count(*)::bigint AS n,
       max(id)::bigint AS last_id
  FROM webhook_attempts
 WHERE id > sqlc.arg(after_id)::bigint
 GROUP BY 1;
