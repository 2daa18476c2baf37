-- Queries used only by cmd/compute-bench (generated into its benchdb
-- package): server facts and counters read before and after a measurement,
-- and a synthetic outbox backlog. None of them runs in the service.

-- name: BenchSettings :many
-- The server settings a benchmark figure depends on, recorded with it, in
-- SHOW's spelling (128MB rather than 16384 units of 8kB).
SELECT name::text AS name, current_setting(name)::text AS setting
  FROM pg_catalog.pg_settings WHERE name = ANY(sqlc.arg(names)::text[]) ORDER BY name;

-- name: BenchMultixactAge :one
-- Multixacts assigned since this database's datminmxid: the difference of
-- two readings is the number of multixacts created in between (cluster-wide),
-- as long as no vacuum advanced datminmxid meanwhile.
SELECT mxid_age(datminmxid)::bigint AS age FROM pg_catalog.pg_database WHERE datname = current_database();

-- name: BenchDeadlocks :one
-- Deadlocks (40P01) detected in this database so far. Statistics reach this
-- view when a backend flushes them, so read it after closing the load pool.
SELECT coalesce(deadlocks, 0)::bigint AS deadlocks FROM pg_catalog.pg_stat_database WHERE datname = current_database();

-- name: BenchOutboxSeed :exec
-- Inserts n committed-looking events in one statement, spread over
-- transaction ids below the current frontier (per_tx rows per txid), so a
-- backlog of a million rows takes seconds instead of a million commits.
INSERT INTO outbox (id, txid, type, tenant_id, subject, data)
SELECT gen_random_uuid(), (i / sqlc.arg(per_tx)::bigint + 1)::text::xid8, 'bench.event', 'bench',
       'bench/' || i, jsonb_build_object('i', i)
  FROM generate_series(0::bigint, sqlc.arg(n)::bigint - 1) AS i;

-- name: BenchOutboxFrontier :one
-- The reader frontier as a number: rows with a txid below it are visible.
SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin;

-- name: BenchOutboxPositionAt :one
-- The position of the row at offset n in log order, to read from the middle.
SELECT txid, seq FROM outbox ORDER BY txid, seq OFFSET sqlc.arg(n)::bigint LIMIT 1;

-- name: BenchOutboxTruncate :exec
-- Empties the benchmark's own outbox between backlog sizes (its database is
-- bench_outbox_*, never the service's).
TRUNCATE outbox;

-- name: BenchOutboxAnalyze :exec
-- Fresh statistics after a bulk seed, as autovacuum would give a real log.
ANALYZE outbox;

-- name: BenchBackendPID :one
-- The pid of the backend serving this connection; its parent is the
-- postmaster, whose processes' CPU time the benchmark reads from /proc.
SELECT pg_backend_pid()::int AS pid;

-- name: BenchNextTxid :one
-- The txid the next transaction will get: every transaction committed
-- before this statement has a smaller one.
SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next_txid;

-- name: BenchFrontierPassed :one
-- Whether every transaction with a txid below next_txid has ended, so
-- that all they appended is visible to the outbox readers.
SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint >= sqlc.arg(next_txid)::bigint AS passed;
