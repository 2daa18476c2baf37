-- name: DeviceBookingInsert :execrows
-- Rule 1. The caller holds the device row FOR NO KEY UPDATE (lockAtoms), so
-- no other booker of this device is in flight, and this statement's
-- snapshot, taken after the lock, sees every booking committed before it.
-- Zero rows means the device is booked in the window: the lookup reads
-- the btree device_bookings_device_end (see migration 0027 and, for its
-- form, DeviceFreeAtoms), never the GiST index,
-- so a booking the GiST index lost still refuses. The exclusion constraint
-- stays as the backstop; its 23P01 is mapped to zero rows by the caller.
INSERT INTO device_bookings (device_id, allocation_id, during)
SELECT sqlc.arg(device_id)::text, sqlc.arg(allocation_id)::text,
       tstzrange(sqlc.arg(from_ts)::timestamptz, sqlc.arg(to_ts)::timestamptz, '[)')
 WHERE (
   SELECT b.id FROM device_bookings b
    WHERE b.device_id COLLATE "C" = sqlc.arg(device_id)::text
      AND coalesce(upper(b.during), 'infinity'::timestamptz) >= sqlc.arg(from_ts)::timestamptz
      AND range_overlaps(b.during, tstzrange(sqlc.arg(from_ts)::timestamptz, sqlc.arg(to_ts)::timestamptz, '[)'))
    ORDER BY coalesce(upper(b.during), 'infinity'::timestamptz) LIMIT 1) IS NULL;

-- name: DeviceBookingProbeFromNow :execrows
-- gpus.setMode's probe: books an atom from now on, for ever. Zero rows
-- means something is booked on it now or later. The GPU and its atoms are
-- held FOR UPDATE; the same btree check as DeviceBookingInsert.
INSERT INTO device_bookings (device_id, allocation_id, during)
SELECT sqlc.arg(device_id)::text, sqlc.arg(allocation_id)::text, tstzrange(compute_now(), NULL, '[)')
 WHERE (
   SELECT b.id FROM device_bookings b
    WHERE b.device_id COLLATE "C" = sqlc.arg(device_id)::text
      AND coalesce(upper(b.during), 'infinity'::timestamptz) >= compute_now()
      AND range_overlaps(b.during, tstzrange(compute_now(), NULL, '[)'))
    ORDER BY coalesce(upper(b.during), 'infinity'::timestamptz) LIMIT 1) IS NULL;

-- name: DeviceBookingsCutBack :one
-- A preemptor that needs an allocation's atoms only from a later instant
-- cuts its bookings back to that instant (commands' cutBack): a booking
-- that starts there or later is deleted, one across it ends there. Ranges
-- only shrink, so the exclusion constraint holds whatever else is booked;
-- the two touch disjoint rows. The count is of the bookings changed.
WITH gone AS (
  DELETE FROM device_bookings f
   WHERE f.allocation_id = sqlc.arg(allocation_id)::text AND lower(f.during) >= sqlc.arg(end_ts)::timestamptz
  RETURNING f.id
), cut AS (
  UPDATE device_bookings r SET during = tstzrange(lower(r.during), sqlc.arg(end_ts)::timestamptz, '[)')
   WHERE r.allocation_id = sqlc.arg(allocation_id)::text AND lower(r.during) < sqlc.arg(end_ts)::timestamptz
     AND coalesce(upper(r.during), 'infinity'::timestamptz) > sqlc.arg(end_ts)::timestamptz
  RETURNING r.id
)
SELECT ((SELECT count(*) FROM gone) + (SELECT count(*) FROM cut))::bigint AS changed;

-- name: DeviceBookingDeleteByAllocation :execrows
DELETE FROM device_bookings WHERE allocation_id = sqlc.arg(allocation_id);
