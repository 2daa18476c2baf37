-- +goose Up
-- Fair share of the waiting line (docs/concepts/fair-share.md, issue 26
-- item 3). Pending reservations of a pool or a site are tried in order of
-- their tenant's decayed GPU usage divided by its share, instead of each on
-- its own timer in no particular order.

-- A tenant's share, set by an operator (PUT /v1/tenants/{tenant}/fair-share).
-- A tenant without a row has share 1. version counts the changes, one
-- tenant.fair_share_set event each (subject tenants/{tenant}/fair-share).
CREATE TABLE tenant_fair_shares (
  tenant_id  text PRIMARY KEY REFERENCES tenants,
  share      integer NOT NULL CHECK (share BETWEEN 1 AND 1000000),
  version    bigint NOT NULL CHECK (version > 0),
  updated_at timestamptz NOT NULL DEFAULT compute_now()
);

-- The pending reservations of a pool, or of a site, oldest first: what the
-- queue of that scope (reservation.queue, key pool:<id> or site:<id>) reads
-- at each run. Partial, so their size is the waiting line only and a
-- reservation created booked never enters them.
CREATE INDEX reservations_pending_pool ON reservations (pool_id, created_at) WHERE state = 'pending';
CREATE INDEX reservations_pending_site ON reservations (site_id, created_at) WHERE state = 'pending';

-- A tenant's reservations by their end: its decayed usage reads only the
-- ones that ended less than ten half-lives ago (fair_share_usage), not its
-- whole history, which is kept for ever.
CREATE INDEX reservations_tenant_end ON reservations (tenant_id, upper(during));

-- fair_share_usage is the decayed GPU usage of each tenant named, in
-- GPU-hours (atoms × hours, as billing counts reserved time): every
-- allocation of the tenant held its atoms from the later of its
-- reservation's start and its own creation to the earlier of its release,
-- its reservation's end and compute_now(), and each instant t of that
-- interval [s, e) counts 2^(-(now - t)/H), H the half-life. The integral is
-- atoms × H/ln 2 × (2^(-(now - e)/H) - 2^(-(now - s)/H)). Allocations that
-- ended ten half-lives ago or earlier are left out: together they would add
-- less than 1/1024 of what the same holding adds now, and reading them would
-- read a tenant's whole history. Exponents are capped at 1000 half-lives,
-- so that a very old start cannot underflow float8 (which PostgreSQL raises
-- as an error). A tenant without allocations has 0; each tenant named once
-- gets one row.
-- +goose StatementBegin
CREATE FUNCTION fair_share_usage(tenants text[], half_life_seconds float8)
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

-- Where each pending reservation stood in its scope's line at the queue's
-- last run: position (1 is tried first), queued (how many were waiting in
-- the scope), and the usage and share its tenant was ranked by. Derived
-- state, not an event-sourced read model: the queue replaces a scope's rows
-- at each run, no event carries them, and a projection rebuild leaves them
-- alone. GET /v1/reservations/{id} shows them for a pending reservation.
CREATE TABLE pending_queue_positions (
  reservation_id text PRIMARY KEY REFERENCES reservations,
  scope          text NOT NULL CHECK (scope ~ '^(pool|site):.+$'),
  position       integer NOT NULL CHECK (position > 0),
  queued         integer NOT NULL CHECK (queued >= position),
  tenant_usage   float8 NOT NULL CHECK (tenant_usage >= 0),
  tenant_share   integer NOT NULL CHECK (tenant_share BETWEEN 1 AND 1000000),
  computed_at    timestamptz NOT NULL
);
CREATE INDEX pending_queue_positions_scope ON pending_queue_positions (scope);

-- +goose Down
DROP TABLE pending_queue_positions;
DROP FUNCTION fair_share_usage(text[], float8);
DROP INDEX reservations_tenant_end;
DROP INDEX reservations_pending_site;
DROP INDEX reservations_pending_pool;
DROP TABLE tenant_fair_shares;
