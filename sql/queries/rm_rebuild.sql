-- name: RmRebuildPrepare :exec
-- Creates empty copies of a projection's tables in schema rm_rebuild.
SELECT rm_rebuild_prepare(sqlc.arg(tables)::text[]);

-- name: RmRebuildUseShadow :exec
-- For the rest of the transaction, unqualified rm_* names resolve to the
-- copies in rm_rebuild, so the projection's own statements fill them.
SELECT set_config('search_path', 'rm_rebuild, public', true);

-- name: RmRebuildSwap :exec
-- Replaces the live tables by the rebuilt copies, in the caller's
-- transaction.
SELECT rm_rebuild_swap(sqlc.arg(tables)::text[]);

-- name: RmRebuildTakeLease :one
-- A rebuild takes the projection's dispatch lease even from a live holder:
-- the epoch moves on, so the holder's next fenced transaction fails, and
-- this statement waits for one in flight (it holds the row FOR SHARE) to
-- end. The holder gets the lease back after the rebuild releases it.
INSERT INTO leases AS l (name, owner, epoch, expires_at)
VALUES (sqlc.arg(name), sqlc.arg(owner), 1, compute_now() + make_interval(secs => sqlc.arg(ttl_seconds)::float8))
ON CONFLICT (name) DO UPDATE
   SET owner = EXCLUDED.owner,
       epoch = CASE WHEN l.owner = EXCLUDED.owner THEN l.epoch ELSE l.epoch + 1 END,
       expires_at = EXCLUDED.expires_at
RETURNING l.epoch, l.expires_at, compute_now()::timestamptz AS db_now;
