-- name: RmReservationApply :execrows
-- Writes a reservation as one of its events describes it. The position of
-- the event that created the row stays; an event whose version is not newer
-- than the row's changes nothing, so a replayed batch is harmless.
INSERT INTO rm_reservations AS r (id, tenant_id, state, pool_id, site_id, node_id, device_ids, start_ts, end_ts,
       tolerations, conditions, version, created_txid, created_seq, updated_txid, updated_seq, created_at, updated_at,
       priority_class, priority, preemptible, spec)
VALUES (sqlc.arg(id), sqlc.arg(tenant_id), sqlc.arg(state), sqlc.narg(pool_id), sqlc.narg(site_id), sqlc.narg(node_id),
        sqlc.arg(device_ids)::text[], sqlc.arg(start_ts), sqlc.arg(end_ts), sqlc.arg(tolerations)::text[],
        sqlc.arg(conditions), sqlc.arg(version), sqlc.arg(txid)::xid8, sqlc.arg(seq)::bigint,
        sqlc.arg(txid)::xid8, sqlc.arg(seq)::bigint, sqlc.arg(at)::timestamptz, sqlc.arg(at)::timestamptz,
        sqlc.arg(priority_class), sqlc.arg(priority), sqlc.arg(preemptible), sqlc.arg(spec))
ON CONFLICT (id) DO UPDATE
   SET state = EXCLUDED.state, pool_id = EXCLUDED.pool_id, site_id = EXCLUDED.site_id,
       node_id = EXCLUDED.node_id, device_ids = EXCLUDED.device_ids, start_ts = EXCLUDED.start_ts,
       end_ts = EXCLUDED.end_ts, tolerations = EXCLUDED.tolerations, conditions = EXCLUDED.conditions,
       version = EXCLUDED.version, updated_txid = EXCLUDED.updated_txid, updated_seq = EXCLUDED.updated_seq,
       updated_at = EXCLUDED.updated_at, priority_class = EXCLUDED.priority_class, priority = EXCLUDED.priority,
       preemptible = EXCLUDED.preemptible, spec = EXCLUDED.spec
 WHERE r.version < EXCLUDED.version;

-- name: RmReservationGet :one
SELECT id, tenant_id, state, pool_id, site_id, node_id, device_ids, start_ts, end_ts, tolerations, conditions,
       version, created_txid, created_seq, updated_txid, updated_seq, created_at, updated_at,
       priority_class, priority, preemptible, spec
  FROM rm_reservations WHERE id = sqlc.arg(id);

-- name: RmReservationList :many
-- A keyset page in creation order: after the (txid, seq) of the creating
-- event of the last row of the previous page. New reservations sort last,
-- so paging never skips or repeats one. Every tenant's (an operator's list);
-- one state's pages are RmReservationListInState, one tenant's
-- RmReservationListOfTenant and RmReservationListOfTenantInState.
SELECT id, tenant_id, state, pool_id, site_id, node_id, device_ids, start_ts, end_ts, tolerations, conditions,
       version, created_txid, created_seq, updated_txid, updated_seq, created_at, updated_at,
       priority_class, priority, preemptible, spec
  FROM rm_reservations
 WHERE (created_txid, created_seq) > (sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint)
 ORDER BY created_txid, created_seq
 LIMIT sqlc.arg(max_rows);

-- name: RmReservationListInState :many
-- RmReservationList's page of one state, every tenant's, from
-- rm_reservations_state, so that it reads the page and not every
-- reservation ever made (ended ones are kept for ever). Bounded by and
-- ordered by state for the same reason as RmReservationListOfTenant's
-- tenant.
SELECT id, tenant_id, state, pool_id, site_id, node_id, device_ids, start_ts, end_ts, tolerations, conditions,
       version, created_txid, created_seq, updated_txid, updated_seq, created_at, updated_at,
       priority_class, priority, preemptible, spec
  FROM rm_reservations
 WHERE (state, created_txid, created_seq) > (sqlc.arg(state)::text, sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint)
   AND state <= sqlc.arg(state)::text
 ORDER BY state, created_txid, created_seq
 LIMIT sqlc.arg(max_rows);

-- name: RmReservationListOfTenant :many
-- RmReservationList's page of one tenant, from rm_reservations_tenant. The
-- tenant is bounded by comparisons and ordered by, rather than
-- tenant_id =, so that only that index gives the order: with tenant_id =
-- the order is (created_txid, created_seq) alone, which
-- rm_reservations_created gives too, and a connection's cached generic
-- plan, which knows no tenant, may walk every tenant's reservations in
-- that order and filter. It did: once one tenant's costly pages had made
-- the custom plans look dear, a connection kept a generic plan that read
-- all 200,000 rows of the table for a tenant of ten.
SELECT id, tenant_id, state, pool_id, site_id, node_id, device_ids, start_ts, end_ts, tolerations, conditions,
       version, created_txid, created_seq, updated_txid, updated_seq, created_at, updated_at,
       priority_class, priority, preemptible, spec
  FROM rm_reservations
 WHERE (tenant_id, created_txid, created_seq) > (sqlc.arg(tenant_id)::text, sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint)
   AND tenant_id <= sqlc.arg(tenant_id)::text
 ORDER BY tenant_id, created_txid, created_seq
 LIMIT sqlc.arg(max_rows);

-- name: RmReservationListOfTenantInState :many
-- RmReservationListOfTenant's page of one state, from
-- rm_reservations_tenant_state, so that it reads the page and not the
-- tenant's reservations in other states (a tenant's history of ended
-- reservations is kept for ever). Bounded by and ordered by state for the
-- same reason as RmReservationListOfTenant's tenant.
SELECT id, tenant_id, state, pool_id, site_id, node_id, device_ids, start_ts, end_ts, tolerations, conditions,
       version, created_txid, created_seq, updated_txid, updated_seq, created_at, updated_at,
       priority_class, priority, preemptible, spec
  FROM rm_reservations
 WHERE tenant_id = sqlc.arg(tenant_id)::text
   AND (state, created_txid, created_seq) > (sqlc.arg(state)::text, sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint)
   AND state <= sqlc.arg(state)::text
 ORDER BY state, created_txid, created_seq
 LIMIT sqlc.arg(max_rows);

-- name: RmReservationListAll :many
-- Every row in id order, for comparing a rebuilt table with the live one.
SELECT id, tenant_id, state, pool_id, site_id, node_id, device_ids, start_ts, end_ts, tolerations, conditions,
       version, created_txid, created_seq, updated_txid, updated_seq, created_at, updated_at,
       priority_class, priority, preemptible, spec
  FROM rm_reservations ORDER BY id;

-- name: RmReservationSeed :exec
-- A rebuild starts from the write model (projections.Seeder): every
-- reservation at its version, each field as its events write it (the
-- request as reservation events carry it: no GPU kind without a GPU,
-- tolerations and conditions as arrays; where it was placed kept after it
-- ended). Where it sits in the list is the position of its creating event
-- while the log keeps it, else (created_txid, 0): the transaction that
-- created it created no other reservation, so its txid alone orders it as
-- the event did (projections.Reservations.Seed says why every cursor stays
-- sound). A reservation without created_txid (its events were pruned
-- before migration 0047 and the read model lacked it) is placed at
-- ('0', n), before every other, in order of creation. When it was last
-- written is the time and position of the event that wrote its version,
-- while retained; once pruned, its updated_at and its place in the list.
WITH w AS (
  SELECT r.id, r.created_txid,
         row_number() OVER (PARTITION BY r.created_txid IS NULL ORDER BY r.created_at, r.id) AS n
    FROM reservations r)
INSERT INTO rm_reservations (id, tenant_id, state, pool_id, site_id, node_id, device_ids, start_ts, end_ts,
       tolerations, conditions, version, created_txid, created_seq, updated_txid, updated_seq, created_at, updated_at,
       priority_class, priority, preemptible, spec)
SELECT r.id, r.tenant_id, r.state, r.pool_id, r.site_id, a.node_id, coalesce(a.device_ids, '{}'::text[]),
       lower(r.during), upper(r.during), s.tolerations,
       CASE WHEN jsonb_typeof(r.conditions) = 'array' THEN r.conditions ELSE '[]'::jsonb END, r.version,
       p.txid, p.seq, coalesce(u.txid, p.txid), coalesce(u.seq, p.seq),
       coalesce(c.time, r.created_at), coalesce(u.time, r.updated_at),
       r.priority_class, r.priority, r.preemptible,
       jsonb_build_object(
         'gpu', jsonb_build_object('count', s.gpus,
                                   'kind', CASE WHEN s.gpus > 0 THEN coalesce(r.spec->'gpu'->>'kind', '') ELSE '' END)
                || jsonb_strip_nulls(jsonb_build_object('model', nullif(r.spec->'gpu'->>'model', ''),
                                                        'migProfile', nullif(r.spec->'gpu'->>'migProfile', ''),
                                                        'slotKind', nullif(r.spec->'gpu'->>'slotKind', ''))),
         'vcpu', coalesce((r.spec->>'vcpu')::bigint, 0), 'memoryMb', coalesce((r.spec->>'memoryMb')::bigint, 0),
         'diskGb', coalesce((r.spec->>'diskGb')::bigint, 0), 'tolerations', to_jsonb(s.tolerations))
  FROM reservations r
  JOIN w ON w.id = r.id
  CROSS JOIN LATERAL (
    SELECT coalesce((r.spec->'gpu'->>'count')::int, 0) AS gpus,
           CASE WHEN jsonb_typeof(r.spec->'tolerations') = 'array'
                THEN ARRAY(SELECT jsonb_array_elements_text(r.spec->'tolerations')) ELSE '{}'::text[] END AS tolerations) s
  LEFT JOIN allocations a ON a.reservation_id = r.id
  -- Its creating event: the one of its subject in its creation transaction.
  LEFT JOIN LATERAL (
    SELECT o.txid, o.seq, o.time FROM outbox o
     WHERE o.txid = r.created_txid AND o.subject = 'reservations/' || r.id
     ORDER BY o.seq LIMIT 1) c ON true
  CROSS JOIN LATERAL (
    SELECT coalesce(c.txid, r.created_txid, '0'::xid8) AS txid,
           coalesce(c.seq, CASE WHEN r.created_txid IS NULL THEN w.n ELSE 0 END)::bigint AS seq) p
  -- The event that wrote its version: the first of them, as the
  -- projection applies only a newer version.
  LEFT JOIN (
    SELECT DISTINCT ON (o.subject, (o.data->>'version')::bigint)
           o.subject, (o.data->>'version')::bigint AS version, o.txid, o.seq, o.time
      FROM outbox o
     WHERE o.subject LIKE 'reservations/%' AND o.type LIKE 'reservation.%'
     ORDER BY o.subject, (o.data->>'version')::bigint, o.txid, o.seq) u
    ON u.subject = 'reservations/' || r.id AND u.version = r.version;
