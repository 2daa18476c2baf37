-- name: ReservationCreate :one
-- priority and preemptible are the class's value and flag, copied when the
-- reservation is created (PriorityClassForReservation). created_txid is
-- this transaction, that of the reservation's creating event: it creates
-- no other reservation, so a rebuild of the read model orders the
-- reservation by it once that event is pruned (migration 0047).
INSERT INTO reservations (id, tenant_id, created_by, state, pool_id, site_id, spec, during, charges, conditions,
                          priority_class, priority, preemptible, created_txid)
VALUES (sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(created_by), sqlc.arg(state), sqlc.narg(pool_id),
        sqlc.narg(site_id), sqlc.arg(spec), tstzrange(sqlc.arg(start_ts)::timestamptz, sqlc.arg(end_ts)::timestamptz, '[)'),
        sqlc.arg(charges), sqlc.arg(conditions), sqlc.arg(priority_class), sqlc.arg(priority), sqlc.arg(preemptible),
        pg_current_xact_id())
RETURNING id, version;

-- name: ReservationGet :one
SELECT id, tenant_id, created_by, state, pool_id, site_id, spec,
       lower(during)::timestamptz AS start_ts, upper(during)::timestamptz AS end_ts,
       charges, conditions, version, created_at, updated_at, priority_class, priority, preemptible
  FROM reservations WHERE id = sqlc.arg(id);

-- name: ReservationUpdateState :execrows
-- A versioned transition; zero rows means someone else changed it first.
UPDATE reservations SET state = sqlc.arg(state), conditions = sqlc.arg(conditions),
       version = version + 1, updated_at = compute_now()
 WHERE id = sqlc.arg(id) AND version = sqlc.arg(version);

-- name: ReservationUpdateEnd :execrows
UPDATE reservations SET during = tstzrange(lower(during), sqlc.arg(end_ts)::timestamptz, '[)'),
       version = version + 1, updated_at = compute_now()
 WHERE id = sqlc.arg(id) AND version = sqlc.arg(version);

-- name: ReservationSetCharges :execrows
-- Records the model quota charged when a pending reservation is placed, in
-- the transaction that books it (the version guard is that transition's).
UPDATE reservations SET charges = sqlc.arg(charges)
 WHERE id = sqlc.arg(id) AND version = sqlc.arg(version);

-- name: ReservationSetConditions :execrows
-- Refreshes a pending reservation's conditions when they changed. A change
-- is a new version, for the reservation.pending event the caller writes
-- with it: the read models apply only newer versions, so without one they
-- would keep the reasons of the reservation's creation. Conditions equal
-- to the stored ones (jsonb equality) write nothing, so a reservation that
-- waits for hours does not write an event at every retry of its line.
-- Zero rows: unchanged, or another transaction changed it first; either
-- way no event is owed.
UPDATE reservations SET conditions = sqlc.arg(conditions), version = version + 1, updated_at = compute_now()
 WHERE id = sqlc.arg(id) AND version = sqlc.arg(version) AND state = 'pending'
   AND conditions IS DISTINCT FROM sqlc.arg(conditions);

-- name: ReservationIsPastEnd :one
SELECT upper(during) <= compute_now() AS past_end, lower(during) <= compute_now() AS past_start,
       compute_now()::timestamptz AS now
  FROM reservations WHERE id = sqlc.arg(id);

-- name: ReservationLockTenantPending :exec
-- Serialises, for the rest of the transaction, the creates of one tenant
-- that end pending, so that the cap on its pending reservations
-- (ReservationCountPendingOfTenant) is exact under concurrent creates. A
-- transaction-scoped advisory lock, taken only by a create that found no
-- place, after its placement: it touches no row placement, the queue or a
-- release lock, and booked creates never wait for it.
SELECT pg_advisory_xact_lock(hashtextextended('pending-reservations:' || sqlc.arg(tenant_id)::text, 0));

-- name: ReservationCountPendingOfTenant :one
-- How many of a tenant's reservations are pending, counted up to max_rows
-- (the cap: no more is needed), from reservations_pending_tenant.
SELECT count(*)::int AS pending
  FROM (SELECT 1 FROM reservations
         WHERE tenant_id = sqlc.arg(tenant_id)::text AND state = 'pending'
         LIMIT sqlc.arg(max_rows)::int) p;

-- name: ReservationListLiveOfTenant :many
-- A tenant's reservations that hold capacity or quota (pending, booked,
-- active), oldest first: what a suspend with releaseReservations ends.
SELECT id, state FROM reservations
 WHERE tenant_id = sqlc.arg(tenant_id) AND state IN ('pending', 'booked', 'active')
 ORDER BY created_at, id;
