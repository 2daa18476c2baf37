-- name: DeviceBookingInsert :execrows
-- Rule 1: ON CONFLICT DO NOTHING honours the exclusion constraint, so an
-- overlap inserts zero rows instead of raising; the caller replans.
INSERT INTO device_bookings (device_id, allocation_id, during)
VALUES (sqlc.arg(device_id), sqlc.arg(allocation_id),
        tstzrange(sqlc.arg(from_ts)::timestamptz, sqlc.arg(to_ts)::timestamptz, '[)'))
ON CONFLICT DO NOTHING;

-- name: DeviceBookingProbeFromNow :execrows
-- gpus.setMode's probe: books an atom from now on, for ever. Zero rows
-- means something is booked on it now or later.
INSERT INTO device_bookings (device_id, allocation_id, during)
VALUES (sqlc.arg(device_id), sqlc.arg(allocation_id), tstzrange(compute_now(), NULL, '[)'))
ON CONFLICT DO NOTHING;

-- name: DeviceBookingDeleteByAllocation :execrows
DELETE FROM device_bookings WHERE allocation_id = sqlc.arg(allocation_id);

-- name: DeviceBookingDeleteFuture :execrows
-- Frees the part of an allocation's bookings that has not started.
DELETE FROM device_bookings
 WHERE allocation_id = sqlc.arg(allocation_id) AND lower(during) >= compute_now();

-- name: DeviceBookingTruncateAtNow :execrows
-- Ends a running booking now; the past part stays, for usage and audit.
UPDATE device_bookings SET during = tstzrange(lower(during), compute_now(), '[)')
 WHERE allocation_id = sqlc.arg(allocation_id)
   AND lower(during) < compute_now() AND upper(during) > compute_now();
