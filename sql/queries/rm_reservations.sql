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
-- so paging never skips or repeats one. tenant_id NULL: every tenant.
SELECT id, tenant_id, state, pool_id, site_id, node_id, device_ids, start_ts, end_ts, tolerations, conditions,
       version, created_txid, created_seq, updated_txid, updated_seq, created_at, updated_at,
       priority_class, priority, preemptible, spec
  FROM rm_reservations
 WHERE (sqlc.narg(tenant_id)::text IS NULL OR tenant_id = sqlc.narg(tenant_id)::text)
   AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state)::text)
   AND (created_txid, created_seq) > (sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint)
 ORDER BY created_txid, created_seq
 LIMIT sqlc.arg(max_rows);

-- name: RmReservationListAll :many
-- Every row in id order, for comparing a rebuilt table with the live one.
SELECT id, tenant_id, state, pool_id, site_id, node_id, device_ids, start_ts, end_ts, tolerations, conditions,
       version, created_txid, created_seq, updated_txid, updated_seq, created_at, updated_at,
       priority_class, priority, preemptible, spec
  FROM rm_reservations ORDER BY id;
