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

-- name: LeaseBalance :many
-- A group's members share the leases named (the work-queue shards among
-- the worker processes), in one statement that locks its rows in name
-- order, as LeaseAcquireMany does. It renews the caller's membership lease
-- (member_prefix || owner) and counts the live members in the same
-- statement; the caller's share is the number of names divided by the
-- members, plus one for the first (number of names modulo members) members
-- in owner order, so that the shares add up to every name and each member
-- computes the others' from the same rows. Of the names the caller holds
-- it keeps its share, those in busy (items run under them) first; the
-- surplus it gives up (expires_at = '-infinity', guarded by owner and
-- epoch) unless busy, and a busy surplus lease is renewed but returned
-- with keep false (draining: the caller claims no more under it and gives
-- it up once idle). When take is set and it holds fewer than its share, it
-- takes free names up to its share: never held, or expired (its own
-- included: one it gave up is not its own any more, so it cannot take it
-- back as held while another member waits for it). A busy one of its own
-- that lapsed and that nobody took is renewed at its epoch, as
-- LeaseAcquireMany would: its running work then still completes. A member
-- at its share takes and gives up nothing, so a stable membership moves no
-- lease.
-- Returns the leases the caller holds afterwards (its membership among
-- them), with the member count and the caller's share.
WITH members AS MATERIALIZED (
  SELECT (count(*) + 1)::int AS n,
         count(*) FILTER (WHERE m.owner < sqlc.arg(owner)::text)::int AS rank
    FROM leases m
   WHERE starts_with(m.name, sqlc.arg(member_prefix)::text) AND m.owner <> sqlc.arg(owner)::text
     AND m.expires_at > compute_now()
), share AS MATERIALIZED (
  SELECT s.n, (cardinality(sqlc.arg(names)::text[]) / s.n
               + CASE WHEN s.rank < cardinality(sqlc.arg(names)::text[]) % s.n THEN 1 ELSE 0 END)::int AS target
    FROM members s
), cur AS MATERIALIZED (
  SELECT x.name, l.owner, l.epoch, l.expires_at, x.name = ANY(sqlc.arg(busy)::text[]) AS busy
    FROM unnest(sqlc.arg(names)::text[]) AS x (name)
    LEFT JOIN leases l ON l.name = x.name
), mine AS MATERIALIZED (
  SELECT c.name, c.epoch, c.busy, row_number() OVER (ORDER BY c.busy DESC, c.name) <= s.target AS keep
    FROM cur c, share s
   WHERE c.owner = sqlc.arg(owner)::text AND (c.expires_at > compute_now() OR c.busy)
), free AS MATERIALIZED (
  SELECT c.name, row_number() OVER (ORDER BY c.name) AS rn
    FROM cur c
   WHERE (c.owner IS NULL OR c.expires_at < compute_now())
     AND (c.owner IS DISTINCT FROM sqlc.arg(owner)::text OR NOT c.busy)
), plan AS MATERIALIZED (
  -- expires_at '-infinity' gives the lease up; epoch is the one held.
  SELECT m.name, m.epoch,
         CASE WHEN m.keep OR m.busy THEN compute_now() + make_interval(secs => sqlc.arg(ttl_seconds)::float8)
              ELSE '-infinity'::timestamptz END AS expires_at,
         m.keep
    FROM mine m
  UNION ALL
  SELECT f.name, 1, compute_now() + make_interval(secs => sqlc.arg(ttl_seconds)::float8), true
    FROM free f, share s
   WHERE sqlc.arg(take)::bool AND f.rn <= s.target - (SELECT count(*) FROM mine)
  UNION ALL
  SELECT sqlc.arg(member_prefix)::text || sqlc.arg(owner)::text, 1,
         compute_now() + make_interval(secs => sqlc.arg(ttl_seconds)::float8), true
), done AS (
  INSERT INTO leases AS l (name, owner, epoch, expires_at)
  SELECT p.name, sqlc.arg(owner)::text, p.epoch, p.expires_at FROM plan p ORDER BY p.name
  ON CONFLICT (name) DO UPDATE
     SET owner = EXCLUDED.owner,
         epoch = CASE WHEN l.owner = EXCLUDED.owner THEN l.epoch ELSE l.epoch + 1 END,
         expires_at = EXCLUDED.expires_at
   WHERE CASE WHEN EXCLUDED.expires_at = '-infinity' THEN l.owner = EXCLUDED.owner AND l.epoch = EXCLUDED.epoch
              ELSE l.owner = EXCLUDED.owner OR l.expires_at < compute_now() END
  RETURNING l.name, l.epoch, l.expires_at
)
SELECT d.name, d.epoch, d.expires_at, p.keep, s.n AS members, s.target, compute_now()::timestamptz AS db_now
  FROM done d JOIN plan p ON p.name = d.name, share s
 WHERE d.expires_at > '-infinity'
 ORDER BY d.name;
