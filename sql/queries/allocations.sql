-- name: AllocationCreateWithBookings :many
-- A placement's allocation and its atoms' bookings in one statement. Each
-- booking is DeviceBookingInsert's (rule 1): the caller holds the atoms
-- FOR NO KEY UPDATE since an earlier statement, so this statement's
-- snapshot sees every booking committed before it, through the btree
-- device_bookings_device_end, never the GiST index. The atoms booked come
-- back; one missing is booked in the window already, and the caller rolls
-- the attempt back. The exclusion constraint stays the backstop (23P01).
-- The ids are unnested from a sub-select so that the planner does not count
-- them: knowing that one or two atoms are booked, it found every custom plan
-- of the booking lookup cheaper than the generic one and planned the
-- statement at every booking (see DeviceLockForBooking).
WITH a AS (
  INSERT INTO allocations (id, reservation_id, node_id, device_ids, vcpu, memory, disk)
  VALUES (sqlc.arg(id), sqlc.arg(reservation_id), sqlc.arg(node_id), sqlc.arg(device_ids)::text[],
          sqlc.arg(vcpu), sqlc.arg(memory), sqlc.arg(disk))
  RETURNING id
)
INSERT INTO device_bookings (device_id, allocation_id, during)
SELECT d.id, a.id, tstzrange(sqlc.arg(from_ts)::timestamptz, sqlc.arg(to_ts)::timestamptz, '[)')
  FROM a, unnest((SELECT sqlc.arg(device_ids)::text[])) AS d(id)
 WHERE (
   SELECT b.id FROM device_bookings b
    WHERE b.device_id COLLATE "C" = d.id
      AND coalesce(upper(b.during), 'infinity'::timestamptz) >= sqlc.arg(from_ts)::timestamptz
      AND range_overlaps(b.during, tstzrange(sqlc.arg(from_ts)::timestamptz, sqlc.arg(to_ts)::timestamptz, '[)'))
    ORDER BY coalesce(upper(b.during), 'infinity'::timestamptz) LIMIT 1) IS NULL
RETURNING device_id;

-- name: AllocationListLive :many
-- The reservation's allocations are read through allocations_reservation
-- first, and only then filtered to the live ones: with "released_at IS
-- NULL" beside the reservation, the generic plan scans the partial index
-- allocations_live_node end to end (it is tiny when the planner looks, so a
-- scan with a filter costs the same as a lookup), which reads every live
-- allocation of the fleet and every dead entry left since the last vacuum
-- (365 per call in the benchmark).
WITH mine AS MATERIALIZED (
  SELECT a.id, a.reservation_id, a.node_id, a.device_ids, a.vcpu, a.memory, a.disk, a.released_at
    FROM allocations a WHERE a.reservation_id = sqlc.arg(reservation_id)
)
SELECT m.id, m.reservation_id, m.node_id, n.pool_id, m.device_ids, m.vcpu, m.memory, m.disk
  FROM mine m JOIN nodes n ON n.id = m.node_id
 WHERE m.released_at IS NULL ORDER BY m.id;

-- name: AllocationReleaseWithBookings :execrows
-- Releases an allocation and frees its atoms from now on, in one statement:
-- the part of its bookings that has not started is deleted, a running
-- booking ends at this instant (its past stays, for usage and audit). The two touch
-- disjoint rows (starting before now, or not). Zero rows: the allocation
-- was released already. The node bounds the allocation's lookup: given
-- the id alone, the generic plan may scan allocations_live_node end to end
-- (see AllocationListLive); given its node, it reads that node's entries.
WITH future AS (
  DELETE FROM device_bookings f
   WHERE f.allocation_id = sqlc.arg(allocation_id) AND lower(f.during) >= compute_now()
), running AS (
  UPDATE device_bookings r SET during = tstzrange(lower(r.during), compute_now(), '[)')
   WHERE r.allocation_id = sqlc.arg(allocation_id)
     AND lower(r.during) < compute_now() AND upper(r.during) > compute_now()
)
UPDATE allocations a SET released_at = compute_now()
 WHERE a.id = sqlc.arg(allocation_id) AND a.node_id = sqlc.arg(node_id) AND a.released_at IS NULL;
