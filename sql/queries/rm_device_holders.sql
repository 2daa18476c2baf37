-- name: RmDeviceHolderBook :exec
-- A reservation was placed: it holds each atom from the later of its start
-- and the moment it was booked (a pending reservation placed late books from
-- then), to its end. Older versions change nothing.
INSERT INTO rm_device_holders AS h (device_id, reservation_id, tenant_id, node_id, during, version,
       updated_txid, updated_seq)
SELECT d, sqlc.arg(reservation_id), sqlc.arg(tenant_id), sqlc.arg(node_id),
       tstzrange(greatest(sqlc.arg(start_ts)::timestamptz, sqlc.arg(at)::timestamptz), sqlc.arg(end_ts)::timestamptz, '[)'),
       sqlc.arg(version), sqlc.arg(txid)::xid8, sqlc.arg(seq)::bigint
  FROM unnest(sqlc.arg(device_ids)::text[]) AS d
ON CONFLICT (device_id, reservation_id) DO UPDATE
   SET during = EXCLUDED.during, version = EXCLUDED.version,
       updated_txid = EXCLUDED.updated_txid, updated_seq = EXCLUDED.updated_seq
 WHERE h.version < EXCLUDED.version;

-- name: RmDeviceHolderSetEnd :exec
-- A live reservation moved its end (extension) or changed state without
-- ending (activation): the same start, the new end.
UPDATE rm_device_holders
   SET during = tstzrange(lower(during), greatest(lower(during), sqlc.arg(end_ts)::timestamptz), '[)'),
       version = sqlc.arg(version), updated_txid = sqlc.arg(txid)::xid8, updated_seq = sqlc.arg(seq)::bigint
 WHERE reservation_id = sqlc.arg(reservation_id) AND version < sqlc.arg(version) AND NOT isempty(during);

-- name: RmDeviceHolderEndAt :exec
-- A reservation ended at `at` (release, expiry, failure): a hold that had
-- begun is cut there, one that had not becomes empty, as the write model
-- truncates and deletes its bookings.
UPDATE rm_device_holders
   SET during = CASE WHEN lower(during) < least(upper(during), sqlc.arg(at)::timestamptz)
                     THEN tstzrange(lower(during), least(upper(during), sqlc.arg(at)::timestamptz), '[)')
                     ELSE 'empty'::tstzrange END,
       version = sqlc.arg(version), updated_txid = sqlc.arg(txid)::xid8, updated_seq = sqlc.arg(seq)::bigint
 WHERE reservation_id = sqlc.arg(reservation_id) AND version < sqlc.arg(version) AND NOT isempty(during);

-- name: RmDeviceHolderAt :many
-- Who held device X at time T: holders of X itself, of its atoms (X is a
-- GPU shared by MIG or slots) and of its GPU (X is an atom of a GPU that was
-- booked whole at that time).
SELECT h.device_id, h.reservation_id, h.tenant_id, h.node_id,
       lower(h.during)::timestamptz AS from_ts, upper(h.during)::timestamptz AS to_ts,
       h.version, h.updated_txid, h.updated_seq
  FROM rm_device_holders h
 WHERE h.during @> sqlc.arg(at)::timestamptz
   AND (h.device_id = sqlc.arg(device_id)::text
        OR h.device_id IN (SELECT c.id FROM rm_fleet_devices c WHERE c.parent_id = sqlc.arg(device_id)::text)
        OR h.device_id = (SELECT p.parent_id FROM rm_fleet_devices p WHERE p.id = sqlc.arg(device_id)::text))
 ORDER BY h.device_id, h.reservation_id;

-- name: RmDeviceHolderListFrom :many
-- The holds on a node's atoms that end after `at`: current and future
-- bookings, for the node view.
SELECT h.device_id, h.reservation_id, h.tenant_id, h.node_id,
       lower(h.during)::timestamptz AS from_ts, upper(h.during)::timestamptz AS to_ts, h.version
  FROM rm_device_holders h
 WHERE h.node_id = sqlc.arg(node_id) AND NOT isempty(h.during) AND upper(h.during) > sqlc.arg(at)::timestamptz
 ORDER BY h.device_id, lower(h.during);

-- name: RmDeviceHolderListAll :many
SELECT device_id, reservation_id, tenant_id, node_id, isempty(during) AS withdrawn,
       coalesce(lower(during), 'epoch')::timestamptz AS from_ts,
       coalesce(upper(during), 'epoch')::timestamptz AS to_ts, version, updated_txid, updated_seq
  FROM rm_device_holders ORDER BY device_id, reservation_id;

-- name: RmDeviceHolderSeed :exec
-- A rebuild starts from the write model (projections.Seeder): each atom of
-- every allocation, held over its bookings (from the first one's start to
-- the last one's end: an extension adds a booking), or withdrawn (empty)
-- when the write model deleted its bookings, which it does to a booking
-- released before it began. The version is the reservation's: every event
-- of a placed reservation writes its holds, up to the one that ends it.
-- The position is that event's while retention keeps it; once pruned, 0,
-- before every retained event.
INSERT INTO rm_device_holders (device_id, reservation_id, tenant_id, node_id, during, version,
       updated_txid, updated_seq)
SELECT d.device_id, r.id, r.tenant_id, a.node_id, coalesce(b.during, 'empty'::tstzrange), r.version,
       coalesce(e.txid, '0'::xid8), coalesce(e.seq, 0)
  FROM allocations a
  JOIN reservations r ON r.id = a.reservation_id
  CROSS JOIN LATERAL unnest(a.device_ids) AS d(device_id)
  LEFT JOIN (SELECT allocation_id, device_id, tstzrange(min(lower(during)), max(upper(during)), '[)') AS during
               FROM device_bookings GROUP BY allocation_id, device_id) b
         ON b.allocation_id = a.id AND b.device_id = d.device_id
  LEFT JOIN outbox e ON e.subject = 'reservations/' || r.id AND (e.data->>'version')::bigint = r.version
ON CONFLICT (device_id, reservation_id) DO NOTHING;
