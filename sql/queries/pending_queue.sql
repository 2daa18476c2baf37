-- name: PendingQueueRank :many
-- One run of a scope's queue (reservation.queue): the pending reservations
-- of the pool or the site (one of pool_id and site_id is NULL) that have
-- not reached their end. First those whose priority may preempt (a
-- preemptible class has a lower value), highest priority first: each would
-- take the capacity of the lower classes anyway, so trying the lower ones
-- before them only booked what was then preempted in the same run. Then,
-- and within one such priority, in fair-share order: their tenant's decayed
-- GPU usage (fair_share_usage) divided by its share (1 without a row)
-- ascending, then the reservation's priority (higher first), then the
-- oldest first, then the id. It replaces the scope's rows of
-- pending_queue_positions with where each one stands (the rows of
-- reservations no longer waiting go) and returns at most max_rows of them,
-- which the run tries in the line's order. When more wait than that, the
-- rows returned are each tenant's first in the line, then each tenant's
-- second, and so on: the line's order says who gets capacity first among
-- those tried, never who is tried at all, so a tenant whose usage ranks it
-- first cannot fill every try of every run with reservations that never
-- fit and keep another tenant's, which would fit, from ever being tried.
-- The reservations of a suspended tenant keep their place in the line
-- (their positions are written and counted in queued) but are not
-- returned: nothing of theirs is tried while the tenant is suspended, so
-- they take no try from those behind them. runnable counts the others,
-- which is what a run compares with the rows returned to know whether some
-- were left for the next run.
WITH pending AS (
  SELECT r.id, r.tenant_id, r.priority, r.created_at,
         CASE WHEN EXISTS (SELECT 1 FROM priority_classes o WHERE o.preemptible AND o.value < r.priority)
              THEN r.priority END AS preempting,
         EXISTS (SELECT 1 FROM tenants n WHERE n.id = r.tenant_id AND n.suspended_at IS NOT NULL) AS suspended
    FROM reservations r
   WHERE r.state = 'pending'
     AND (r.pool_id = sqlc.narg(pool_id)::text OR r.site_id = sqlc.narg(site_id)::text)
     AND upper(r.during) > compute_now()
), usage AS (
  SELECT u.tenant_id, u.gpu_hours
    FROM fair_share_usage(ARRAY(SELECT DISTINCT p.tenant_id FROM pending p), sqlc.arg(half_life_seconds)::float8) AS u (tenant_id, gpu_hours)
), ranked AS (
  SELECT p.id, p.tenant_id, p.priority, p.suspended, u.gpu_hours AS tenant_usage, coalesce(s.share, 1) AS tenant_share,
         row_number() OVER (ORDER BY p.preempting DESC NULLS LAST, u.gpu_hours / coalesce(s.share, 1),
                                     p.priority DESC, p.created_at, p.id) AS position,
         row_number() OVER (PARTITION BY p.tenant_id
                            ORDER BY p.preempting DESC NULLS LAST, p.priority DESC, p.created_at, p.id) AS tenant_turn,
         count(*) OVER () AS queued,
         count(*) FILTER (WHERE NOT p.suspended) OVER () AS runnable
    FROM pending p
    JOIN usage u ON u.tenant_id = p.tenant_id
    LEFT JOIN tenant_fair_shares s ON s.tenant_id = p.tenant_id
), gone AS (
  DELETE FROM pending_queue_positions q
   WHERE q.scope = sqlc.arg(scope)::text AND NOT EXISTS (SELECT 1 FROM ranked k WHERE k.id = q.reservation_id)
), written AS (
  INSERT INTO pending_queue_positions AS q (reservation_id, scope, position, queued, tenant_usage, tenant_share, computed_at)
  SELECT k.id, sqlc.arg(scope)::text, k.position, k.queued, k.tenant_usage, k.tenant_share, compute_now() FROM ranked k
  ON CONFLICT (reservation_id) DO UPDATE
     SET scope = EXCLUDED.scope, position = EXCLUDED.position, queued = EXCLUDED.queued,
         tenant_usage = EXCLUDED.tenant_usage, tenant_share = EXCLUDED.tenant_share, computed_at = EXCLUDED.computed_at
)
SELECT k.id::text AS id, k.tenant_id::text AS tenant_id, k.position::int AS position, k.queued::int AS queued,
       k.runnable::int AS runnable, k.tenant_usage::float8 AS tenant_usage, k.tenant_share::int AS tenant_share
  FROM (SELECT * FROM ranked WHERE NOT ranked.suspended ORDER BY tenant_turn, position LIMIT sqlc.arg(max_rows)::int) k
 ORDER BY k.position;

-- name: PendingQueueForget :exec
-- Drops the positions of reservations a run placed: they no longer wait.
DELETE FROM pending_queue_positions WHERE reservation_id = ANY(sqlc.arg(ids)::text[]);

-- name: PendingQueueScopeOf :one
-- The scope of a reservation's queue and whether it still waits there:
-- what the old per-reservation retry (reservation.place) needs to wake the
-- queue instead.
SELECT pool_id, site_id, (state = 'pending' AND upper(during) > compute_now())::boolean AS waiting
  FROM reservations WHERE id = sqlc.arg(id);

-- name: PendingQueuePositionGet :one
-- Where a pending reservation stood in its scope's line at the queue's last
-- run (the position's columns NULL: not ranked yet), and whether its tenant
-- is suspended, which the line's runs skip. No row: no longer pending in
-- the write model.
SELECT p.scope, p.position, p.queued, p.tenant_usage, p.tenant_share, p.computed_at,
       (n.suspended_at IS NOT NULL)::boolean AS tenant_suspended
  FROM reservations r
  LEFT JOIN tenants n ON n.id = r.tenant_id
  LEFT JOIN pending_queue_positions p ON p.reservation_id = r.id
 WHERE r.id = sqlc.arg(reservation_id) AND r.state = 'pending';

-- name: PendingQueueDueIn :one
-- How long until a scope's queue may run again: its last run (the time its
-- positions were computed) plus the retry interval, less compute_now(); 0
-- or less when it may run now, or when it has no positions.
SELECT coalesce(extract(epoch FROM max(computed_at) + make_interval(secs => sqlc.arg(interval_seconds)::float8)
                                  - compute_now()), 0)::float8 AS due_in_seconds
  FROM pending_queue_positions
 WHERE scope = sqlc.arg(scope);

-- name: PendingQueueScopesOfTenant :many
-- The scopes (pool or site, the other NULL) in whose lines the tenant has
-- pending reservations: the lines a resume wakes, since the runs during
-- the suspension skipped the tenant's reservations.
SELECT DISTINCT r.pool_id, r.site_id FROM reservations r
 WHERE r.tenant_id = sqlc.arg(tenant_id) AND r.state = 'pending';
