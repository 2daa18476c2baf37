-- A read replica's lag (queries.Replica): the primary's WAL position,
-- sampled over time, against the position the standby has replayed.
-- Positions are bytes from 0/0.

-- name: ReplicaPrimaryWALPosition :one
-- The primary's WAL write position.
SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint AS position;

-- name: ReplicaReplayPosition :one
-- What a standby has replayed, and whether the server is a standby at all
-- (in recovery): a primary answers false and 0.
SELECT pg_is_in_recovery() AS standby,
       COALESCE((pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint, 0)::bigint AS position;

-- name: ReplicaNewestEvent :many
-- The standby's newest event (no row while its log is empty): a standby
-- of the primary holds a prefix of the primary's log, so the primary has
-- this event, at this position, unless retention pruned it there.
SELECT o.id, o.txid, o.seq
  FROM outbox o
 ORDER BY o.txid DESC, o.seq DESC
 LIMIT 1;
