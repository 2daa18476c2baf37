-- +goose Up
-- Fair share from a settled total (docs/concepts/fair-share.md,
-- docs/decisions/0018-fair-share-settled-total.md). fair_share_usage read
-- every allocation of a tenant that ended in the last ten half-lives (70
-- days by default): with 300,000 of them, 0.8 to 0.95 s at every run of a
-- waiting line the tenant waits in and at every GET …/fair-share. The
-- decayed usage is a sum over allocations, and decay is a product: what
-- the allocations final at a time W add at W, times 2^(-(now - W)/H), is
-- what they add now. So the fold (fair_share_fold, the fair-share.fold
-- reconciler) keeps that sum per tenant and half-life at a watermark W, and
-- fair_share_usage reads only what changed since W: the tenant's live
-- allocations, those released after W, and those that left the ten
-- half-lives window since W.

-- The watermark of each half-life's settled totals: every allocation
-- released at or before settled_at is in them. One row per half-life
-- folded (COMPUTE_FAIR_SHARE_HALF_LIFE, in seconds); a change of the
-- setting starts a new row and leaves the old one unused.
CREATE TABLE fair_share_folds (
  half_life_seconds float8 PRIMARY KEY CHECK (half_life_seconds > 0),
  settled_at        timestamptz NOT NULL
);

-- A tenant's settled total at its half-life's watermark W: gpu_hours is
-- the decayed usage at W of its allocations released at or before W that
-- ended after W minus ten half-lives and held something (their end after
-- their start), allocations how many those are. The count makes a total
-- whose allocations all left the window exactly 0, not a float remainder
-- of additions and subtractions (the line ranks by it: two tenants that
-- used nothing must tie).
CREATE TABLE tenant_fair_share_settled (
  half_life_seconds float8 NOT NULL REFERENCES fair_share_folds ON DELETE CASCADE,
  tenant_id         text NOT NULL REFERENCES tenants,
  gpu_hours         float8 NOT NULL,
  allocations       bigint NOT NULL CHECK (allocations >= 0),
  PRIMARY KEY (half_life_seconds, tenant_id)
);

-- Allocations by their release: the fold reads those released since the
-- last watermark, and fair_share_usage those released since the current
-- one (and those released ten half-lives before it), a window of minutes.
-- A release is already a new index entry (allocations_live_node's
-- predicate reads released_at); this adds one more, no statement.
CREATE INDEX allocations_released ON allocations (released_at) WHERE released_at IS NOT NULL;

-- A tenant's reservations that hold an allocation (booked or active hold
-- exactly one live allocation, every other state none:
-- InvariantAllocationState): fair_share_usage reads the live allocations
-- through them, not through the tenant's whole history.
CREATE INDEX reservations_held_tenant ON reservations (tenant_id) WHERE state IN ('booked', 'active');

-- fair_share_held is what one allocation adds to the decayed usage at time
-- at, in GPU-hours: atoms held over [s, e), each instant t weighing
-- 2^(-(at - t)/h), exponents capped at 1000 half-lives (float8 underflow
-- is an error in PostgreSQL). The caller checks e > s. The formula of
-- migration 0034, written once.
-- +goose StatementBegin
CREATE FUNCTION fair_share_held(atoms integer, s timestamptz, e timestamptz, at timestamptz, h float8)
RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT atoms * h / 3600 / ln(2) *
         (power(2::float8, -least(extract(epoch FROM at - e)::float8 / h, 1000)) -
          power(2::float8, -least(extract(epoch FROM at - s)::float8 / h, 1000)))
$$;
-- +goose StatementEnd

-- fair_share_usage_full is fair_share_usage as migration 0034 computed it:
-- every allocation of the tenants that ended less than ten half-lives
-- before at. It answers for a tenant without a settled total, and it is
-- the reference the settled one is tested against.
-- +goose StatementBegin
CREATE FUNCTION fair_share_usage_full(tenants text[], half_life_seconds float8, at timestamptz)
RETURNS TABLE (tenant_id text, gpu_hours float8)
LANGUAGE sql STABLE AS $$
  WITH held AS (
    SELECT r.tenant_id, cardinality(a.device_ids) AS atoms,
           greatest(lower(r.during), a.created_at) AS s,
           least(coalesce(a.released_at, 'infinity'::timestamptz), upper(r.during), at) AS e
      FROM reservations r
      JOIN allocations a ON a.reservation_id = r.id
     WHERE r.tenant_id = ANY(tenants)
       AND upper(r.during) > at - make_interval(secs => 10 * half_life_seconds)
       AND coalesce(a.released_at, 'infinity'::timestamptz) > at - make_interval(secs => 10 * half_life_seconds)
  ), used AS (
    SELECT held.tenant_id, sum(fair_share_held(held.atoms, held.s, held.e, at, half_life_seconds)) AS gpu_hours
      FROM held
     WHERE held.e > held.s
     GROUP BY held.tenant_id
  )
  SELECT t.tenant_id, coalesce(u.gpu_hours, 0)::float8
    FROM (SELECT DISTINCT unnest(tenants) AS tenant_id) t
    LEFT JOIN used u ON u.tenant_id = t.tenant_id
$$;
-- +goose StatementEnd

-- fair_share_usage: the same answer as migration 0034's (to float
-- rounding), in what the tenant's recent and live allocations cost. With
-- W the watermark of this half-life, when it is less than ten half-lives
-- old, and a settled total for the tenant:
--
--   usage(now) = settled(W) · 2^(-(now - W)/H)
--              − what the settled allocations that ended in
--                (W − 10H, now − 10H] add at this instant, since they
--                left the window: those released then, and those released
--                later, by W, that ended at their reservation's end then
--              + what the allocations not released at W add now: live ones
--                (the one of each booked or active reservation) and those
--                released after W
--
-- An allocation, once released, never changes: its reservation is then
-- terminal, so its end can no longer be extended. A tenant without a
-- settled total, or every tenant when the watermark is missing or old, is
-- computed in full, as migration 0034 did. Never negative; a total whose
-- allocations all left the window is exactly 0.
--
-- Each part is bounded by an index: allocations_released (released after
-- W, or in the minutes of (W − 10H, now − 10H]), reservations_held_tenant
-- (live), reservations_tenant_end (ended in (W − 10H, now − 10H], and the
-- full computation). The bounds come from the watermark row, so the
-- planner cannot see them: a lone "released_at > W" is estimated at a third
-- of the table, which chose a scan of every reservation to join; so each
-- range has both ends (a pair of unknown bounds is estimated at 0.5 %), and
-- each reservation or allocation is looked up by key in a LATERAL
-- subquery that OFFSET 0 keeps from being turned into a hash join.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION fair_share_usage(tenants text[], half_life_seconds float8)
RETURNS TABLE (tenant_id text, gpu_hours float8)
LANGUAGE sql STABLE AS $$
  WITH c AS MATERIALIZED (
    SELECT compute_now() AS now, half_life_seconds AS h, make_interval(secs => 10 * half_life_seconds) AS k
  ), m AS MATERIALIZED (
    SELECT f.settled_at AS w
      FROM c JOIN fair_share_folds f ON f.half_life_seconds = c.h
     WHERE f.settled_at <= c.now AND f.settled_at > c.now - c.k
  ), settled AS MATERIALIZED (
    SELECT s.tenant_id, s.gpu_hours, s.allocations
      FROM c, m, tenant_fair_share_settled s
     WHERE s.half_life_seconds = c.h AND s.tenant_id = ANY(tenants)
  ), ids AS MATERIALIZED (
    SELECT coalesce((SELECT array_agg(s.tenant_id) FROM settled s), '{}') AS settled,
           coalesce((SELECT array_agg(DISTINCT t.t) FROM unnest(tenants) t
                      WHERE NOT EXISTS (SELECT 1 FROM settled x WHERE x.tenant_id = t.t)), '{}') AS unsettled
  ), held AS (
    -- live: the allocation of a booked or active reservation
    SELECT r.tenant_id, a.atoms, greatest(lower(r.during), a.created_at) AS s,
           least(upper(r.during), (SELECT c.now FROM c)) AS e, 'live' AS part
      FROM reservations r
     CROSS JOIN LATERAL (SELECT cardinality(x.device_ids) AS atoms, x.created_at FROM allocations x
                          WHERE x.reservation_id = r.id AND x.released_at IS NULL OFFSET 0) a
     WHERE r.tenant_id = ANY((SELECT ids.settled FROM ids)::text[]) AND r.state IN ('booked', 'active')
       AND upper(r.during) > (SELECT c.now - c.k FROM c)
    UNION ALL
    -- live: released after W
    SELECT r.tenant_id, cardinality(a.device_ids), greatest(lower(r.during), a.created_at),
           least(a.released_at, upper(r.during), (SELECT c.now FROM c)), 'live'
      FROM allocations a
     CROSS JOIN LATERAL (SELECT x.tenant_id, x.during FROM reservations x WHERE x.id = a.reservation_id OFFSET 0) r
     WHERE a.released_at > (SELECT m.w FROM m) AND a.released_at < 'infinity'::timestamptz
       AND r.tenant_id = ANY((SELECT ids.settled FROM ids)::text[])
       AND least(a.released_at, upper(r.during)) > (SELECT c.now - c.k FROM c)
    UNION ALL
    -- left the window: released in (W − 10H, now − 10H] ...
    SELECT r.tenant_id, cardinality(a.device_ids), greatest(lower(r.during), a.created_at),
           least(a.released_at, upper(r.during)), 'left'
      FROM allocations a
     CROSS JOIN LATERAL (SELECT x.tenant_id, x.during FROM reservations x WHERE x.id = a.reservation_id OFFSET 0) r
     WHERE a.released_at > (SELECT m.w - c.k FROM m, c) AND a.released_at <= (SELECT c.now - c.k FROM c)
       AND r.tenant_id = ANY((SELECT ids.settled FROM ids)::text[])
       AND least(a.released_at, upper(r.during)) > (SELECT m.w - c.k FROM m, c)
    UNION ALL
    -- ... or ended then at their reservation's end, released later (by W)
    SELECT r.tenant_id, a.atoms, greatest(lower(r.during), a.created_at), upper(r.during), 'left'
      FROM reservations r
     CROSS JOIN LATERAL (SELECT cardinality(x.device_ids) AS atoms, x.created_at FROM allocations x
                          WHERE x.reservation_id = r.id
                            AND x.released_at > (SELECT c.now - c.k FROM c) AND x.released_at <= (SELECT m.w FROM m)
                         OFFSET 0) a
     WHERE r.tenant_id = ANY((SELECT ids.settled FROM ids)::text[])
       AND upper(r.during) > (SELECT m.w - c.k FROM m, c) AND upper(r.during) <= (SELECT c.now - c.k FROM c)
    UNION ALL
    -- in full: every allocation that ended in the last ten half-lives
    SELECT r.tenant_id, a.atoms, greatest(lower(r.during), a.created_at),
           least(coalesce(a.released_at, 'infinity'::timestamptz), upper(r.during), (SELECT c.now FROM c)), 'full'
      FROM reservations r
     CROSS JOIN LATERAL (SELECT cardinality(x.device_ids) AS atoms, x.created_at, x.released_at FROM allocations x
                          WHERE x.reservation_id = r.id
                            AND coalesce(x.released_at, 'infinity'::timestamptz) > (SELECT c.now - c.k FROM c)
                         OFFSET 0) a
     WHERE r.tenant_id = ANY((SELECT ids.unsettled FROM ids)::text[])
       AND upper(r.during) > (SELECT c.now - c.k FROM c) AND upper(r.during) < 'infinity'::timestamptz
  ), used AS (
    SELECT x.tenant_id,
           sum(fair_share_held(x.atoms, x.s, x.e, c.now, c.h)) FILTER (WHERE x.part <> 'left') AS added,
           sum(fair_share_held(x.atoms, x.s, x.e, c.now, c.h)) FILTER (WHERE x.part = 'left') AS gone,
           count(*) FILTER (WHERE x.part = 'left') AS gone_n
      FROM c, held x
     WHERE x.e > x.s
     GROUP BY x.tenant_id
  )
  SELECT t.tenant_id,
         greatest(CASE WHEN s.tenant_id IS NULL OR s.allocations = coalesce(u.gone_n, 0) THEN 0
                       ELSE s.gpu_hours * power(2::float8, -extract(epoch FROM c.now - m.w)::float8 / c.h) - coalesce(u.gone, 0)
                  END + coalesce(u.added, 0), 0)::float8
    FROM c
   CROSS JOIN (SELECT DISTINCT unnest(tenants) AS tenant_id) t
    LEFT JOIN m ON true
    LEFT JOIN settled s ON s.tenant_id = t.tenant_id
    LEFT JOIN used u ON u.tenant_id = t.tenant_id
$$;
-- +goose StatementEnd

-- fair_share_fold moves the settled totals of a half-life to the watermark
-- compute_now() − margin, and returns it (rebuilt: computed in full). The
-- margin must be longer than any write transaction: a release takes its
-- released_at from its transaction's clock and may commit later; one
-- committed after a fold whose watermark passed its released_at would be
-- counted neither live (released before W) nor settled. Incremental when
-- the previous watermark is less than ten half-lives old: each total is
-- decayed to the new watermark, the allocations released since the old one
-- are added, and those that left the window (ended ten half-lives before)
-- are taken out; in full otherwise (the first fold, a fold that did not run
-- for ten half-lives), which reads what fair_share_usage_full reads, once.
-- A tenant without a total (a new one) gets it in full. Concurrent folds
-- of one half-life wait for each other.
-- +goose StatementBegin
CREATE FUNCTION fair_share_fold(half_life_seconds float8, margin_seconds float8)
RETURNS TABLE (settled_at timestamptz, rebuilt boolean)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  hl CONSTANT float8 := half_life_seconds;
  k  CONSTANT interval := make_interval(secs => 10 * half_life_seconds);
  w1 CONSTANT timestamptz := compute_now() - make_interval(secs => margin_seconds);
  w0 timestamptz;
  full_fold boolean;
  missing text[];
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('fair-share-fold:' || hl::text, 0));
  SELECT f.settled_at INTO w0 FROM fair_share_folds f WHERE f.half_life_seconds = hl;
  IF w0 IS NOT NULL AND w1 <= w0 THEN
    RETURN QUERY SELECT w0, false;
    RETURN;
  END IF;
  full_fold := w0 IS NULL OR w0 <= w1 - k;
  INSERT INTO fair_share_folds AS f (half_life_seconds, settled_at) VALUES (hl, w1)
  ON CONFLICT (half_life_seconds) DO UPDATE SET settled_at = EXCLUDED.settled_at;
  IF full_fold THEN
    DELETE FROM tenant_fair_share_settled s WHERE s.half_life_seconds = hl;
  ELSE
    WITH added AS (
      SELECT r.tenant_id, cardinality(a.device_ids) AS atoms,
             greatest(lower(r.during), a.created_at) AS s, least(a.released_at, upper(r.during)) AS e, 1 AS n
        FROM allocations a JOIN reservations r ON r.id = a.reservation_id
       WHERE a.released_at > w0 AND a.released_at <= w1
         AND least(a.released_at, upper(r.during)) > w1 - k
    ), left_window AS (
      SELECT r.tenant_id, cardinality(a.device_ids) AS atoms,
             greatest(lower(r.during), a.created_at) AS s, least(a.released_at, upper(r.during)) AS e, -1 AS n
        FROM allocations a JOIN reservations r ON r.id = a.reservation_id
       WHERE a.released_at > w0 - k AND a.released_at <= w1 - k
         AND least(a.released_at, upper(r.during)) > w0 - k
      UNION ALL
      SELECT r.tenant_id, cardinality(a.device_ids), greatest(lower(r.during), a.created_at), upper(r.during), -1
        FROM tenant_fair_share_settled t
        JOIN reservations r ON r.tenant_id = t.tenant_id
        JOIN allocations a ON a.reservation_id = r.id
       WHERE t.half_life_seconds = hl
         AND upper(r.during) > w0 - k AND upper(r.during) <= w1 - k
         AND a.released_at > w1 - k AND a.released_at <= w0
    ), delta AS (
      SELECT d.tenant_id, sum(d.n) AS n, sum(d.n * fair_share_held(d.atoms, d.s, d.e, w1, hl)) AS gpu_hours
        FROM (SELECT * FROM added UNION ALL SELECT * FROM left_window) d
       WHERE d.e > d.s
       GROUP BY d.tenant_id
    )
    UPDATE tenant_fair_share_settled t
       SET allocations = t.allocations + coalesce(d.n, 0),
           gpu_hours = CASE WHEN t.allocations + coalesce(d.n, 0) = 0 THEN 0
                            ELSE t.gpu_hours * power(2::float8, -extract(epoch FROM w1 - w0)::float8 / hl)
                                 + coalesce(d.gpu_hours, 0) END
      FROM (SELECT s.tenant_id, d.n, d.gpu_hours
              FROM tenant_fair_share_settled s LEFT JOIN delta d ON d.tenant_id = s.tenant_id
             WHERE s.half_life_seconds = hl AND (s.allocations > 0 OR d.tenant_id IS NOT NULL)) d
     WHERE t.half_life_seconds = hl AND t.tenant_id = d.tenant_id;
  END IF;
  -- In full, the tenants without a total: every tenant after the DELETE,
  -- the new ones else.
  SELECT array_agg(t.id) INTO missing FROM tenants t
   WHERE NOT EXISTS (SELECT 1 FROM tenant_fair_share_settled y WHERE y.half_life_seconds = hl AND y.tenant_id = t.id);
  IF missing IS NOT NULL THEN
    INSERT INTO tenant_fair_share_settled (half_life_seconds, tenant_id, gpu_hours, allocations)
    SELECT hl, t, coalesce(u.gpu_hours, 0), coalesce(u.n, 0)
      FROM unnest(missing) t
      LEFT JOIN (
        SELECT r.tenant_id, count(*) AS n,
               sum(fair_share_held(cardinality(a.device_ids), greatest(lower(r.during), a.created_at),
                                   least(a.released_at, upper(r.during)), w1, hl)) AS gpu_hours
          FROM reservations r JOIN allocations a ON a.reservation_id = r.id
         WHERE r.tenant_id = ANY(missing)
           AND upper(r.during) > w1 - k
           AND a.released_at <= w1 AND a.released_at > w1 - k
           AND least(a.released_at, upper(r.during)) > greatest(lower(r.during), a.created_at)
         GROUP BY r.tenant_id) u ON u.tenant_id = t;
  END IF;
  RETURN QUERY SELECT w1, full_fold;
END
$fn$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION fair_share_fold(float8, float8);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION fair_share_usage(tenants text[], half_life_seconds float8)
RETURNS TABLE (tenant_id text, gpu_hours float8)
LANGUAGE sql STABLE AS $$
  WITH c AS (SELECT compute_now() AS now, half_life_seconds AS h),
  held AS (
    SELECT r.tenant_id, cardinality(a.device_ids) AS atoms,
           greatest(lower(r.during), a.created_at) AS s,
           least(coalesce(a.released_at, 'infinity'::timestamptz), upper(r.during), c.now) AS e,
           c.now, c.h
      FROM c
      JOIN reservations r ON r.tenant_id = ANY(tenants)
                         AND upper(r.during) > c.now - make_interval(secs => 10 * c.h)
      JOIN allocations a ON a.reservation_id = r.id
     WHERE coalesce(a.released_at, 'infinity'::timestamptz) > c.now - make_interval(secs => 10 * c.h)
  ), used AS (
    SELECT held.tenant_id,
           sum(held.atoms * held.h / 3600 / ln(2) *
               (power(2::float8, -least(extract(epoch FROM held.now - held.e)::float8 / held.h, 1000)) -
                power(2::float8, -least(extract(epoch FROM held.now - held.s)::float8 / held.h, 1000)))) AS gpu_hours
      FROM held
     WHERE held.e > held.s
     GROUP BY held.tenant_id
  )
  SELECT t.tenant_id, coalesce(u.gpu_hours, 0)::float8
    FROM (SELECT DISTINCT unnest(tenants) AS tenant_id) t
    LEFT JOIN used u ON u.tenant_id = t.tenant_id
$$;
-- +goose StatementEnd
DROP FUNCTION fair_share_usage_full(text[], float8, timestamptz);
DROP FUNCTION fair_share_held(integer, timestamptz, timestamptz, timestamptz, float8);
DROP INDEX reservations_held_tenant;
DROP INDEX allocations_released;
DROP TABLE tenant_fair_share_settled;
DROP TABLE fair_share_folds;
