-- name: LeaseAcquire :one
-- Takes or renews a lease. A takeover (a new owner after expiry) increments
-- the epoch; a renewal by the owner keeps it. Zero rows: someone else holds it.
INSERT INTO leases AS l (name, owner, epoch, expires_at)
VALUES (sqlc.arg(name), sqlc.arg(owner), 1, compute_now() + make_interval(secs => sqlc.arg(ttl_seconds)::float8))
ON CONFLICT (name) DO UPDATE
   SET owner = EXCLUDED.owner,
       epoch = CASE WHEN l.owner = EXCLUDED.owner THEN l.epoch ELSE l.epoch + 1 END,
       expires_at = EXCLUDED.expires_at
 WHERE l.owner = EXCLUDED.owner OR l.expires_at < compute_now()
RETURNING l.epoch, l.expires_at, compute_now()::timestamptz AS db_now;

-- name: LeaseAcquireMany :many
-- LeaseAcquire for many names in one round trip: a worker takes every free
-- shard and renews the shards it holds. Returns the leases it now holds.
INSERT INTO leases AS l (name, owner, epoch, expires_at)
SELECT n, sqlc.arg(owner)::text, 1, compute_now() + make_interval(secs => sqlc.arg(ttl_seconds)::float8)
  FROM unnest(sqlc.arg(names)::text[]) AS n
 ORDER BY n
ON CONFLICT (name) DO UPDATE
   SET owner = EXCLUDED.owner,
       epoch = CASE WHEN l.owner = EXCLUDED.owner THEN l.epoch ELSE l.epoch + 1 END,
       expires_at = EXCLUDED.expires_at
 WHERE l.owner = EXCLUDED.owner OR l.expires_at < compute_now()
RETURNING l.name, l.epoch, l.expires_at, compute_now()::timestamptz AS db_now;

-- name: LeaseFence :one
-- The first statement of every fenced transaction. The row lock (not a plain
-- EXISTS) is what makes it a fence under READ COMMITTED: a takeover blocks
-- until this transaction ends.
SELECT 1::int AS held FROM leases
 WHERE name = sqlc.arg(name) AND owner = sqlc.arg(owner) AND epoch = sqlc.arg(epoch)
   AND expires_at > compute_now()
   FOR SHARE;

-- name: LeaseRelease :execrows
-- Gives a lease up early so that another process can take it at once.
UPDATE leases SET expires_at = '-infinity'
 WHERE name = sqlc.arg(name) AND owner = sqlc.arg(owner) AND epoch = sqlc.arg(epoch);

-- name: LeaseGet :one
SELECT name, owner, epoch, expires_at FROM leases WHERE name = sqlc.arg(name);
