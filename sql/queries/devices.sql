-- name: DeviceCreate :exec
INSERT INTO devices (id, parent_id, node_id, kind, model, memory_mb, mode, profile, bookable)
VALUES (sqlc.arg(id), sqlc.narg(parent_id), sqlc.arg(node_id), sqlc.arg(kind), sqlc.arg(model),
        sqlc.arg(memory_mb), sqlc.narg(mode), sqlc.narg(profile), sqlc.arg(bookable));

-- name: DeviceGet :one
SELECT id, parent_id, node_id, kind, model, memory_mb, mode, profile, bookable, retired, health, quarantined, version
  FROM devices WHERE id = sqlc.arg(id);

-- name: DeviceListGPUForUpdate :many
-- A GPU and all its atoms, parent first (its id is a prefix of theirs), for
-- gpus.setMode, quarantine and health flips.
SELECT id, parent_id, node_id, kind, model, memory_mb, mode, profile, bookable, retired, health, quarantined, version,
       mig_uuid, mig_capable
  FROM devices WHERE id = sqlc.arg(gpu_id) OR parent_id = sqlc.arg(gpu_id)
 ORDER BY id FOR UPDATE;

-- name: DeviceListByNode :many
SELECT id, parent_id, node_id, kind, model, memory_mb, mode, profile, bookable, retired, health, quarantined, version
  FROM devices WHERE node_id = sqlc.arg(node_id) ORDER BY id;

-- name: DeviceUpdateStatus :execrows
-- Quarantine and health flips of a GPU: a versioned transition.
UPDATE devices SET health = sqlc.arg(health), quarantined = sqlc.arg(quarantined), version = version + 1
 WHERE id = sqlc.arg(id) AND version = sqlc.arg(version);

-- name: DeviceUpdateMode :execrows
UPDATE devices SET mode = sqlc.arg(mode), bookable = (sqlc.arg(mode) = 'exclusive'), version = version + 1
 WHERE id = sqlc.arg(id) AND kind = 'gpu' AND version = sqlc.arg(version);

-- name: DeviceRetireAtoms :execrows
UPDATE devices SET retired = true, bookable = false, version = version + 1
 WHERE parent_id = sqlc.arg(gpu_id) AND NOT retired;

-- name: DeviceUpsertAtom :exec
-- An atom of a new layout; an id used by an earlier layout comes back to life.
-- mig_uuid is the MIG instance the new layout pairs it with (migUUIDsOfLayout),
-- never what the id was paired with before: that may be another profile's.
INSERT INTO devices (id, parent_id, node_id, kind, model, memory_mb, profile, bookable, mig_uuid)
VALUES (sqlc.arg(id), sqlc.arg(parent_id), sqlc.arg(node_id), sqlc.arg(kind), sqlc.arg(model),
        sqlc.arg(memory_mb), sqlc.arg(profile), true, sqlc.narg(mig_uuid))
ON CONFLICT (id) DO UPDATE
   SET kind = EXCLUDED.kind, profile = EXCLUDED.profile, memory_mb = EXCLUDED.memory_mb,
       mig_uuid = EXCLUDED.mig_uuid, bookable = true, retired = false, version = devices.version + 1;

-- name: DeviceFreeAtoms :many
-- Every free matching atom of one node (a node has a few dozen at most), in
-- device-id order; the placer picks among them. Not locked:
-- DeviceLockForBooking locks the chosen ones. Bookings are looked up through
-- the btree device_bookings_device_end (device_id COLLATE "C"), not the GiST
-- index: a rescanned GiST scan is what damages that index (see migration 0027).
-- The lookup is a sub-select of b.id with LIMIT 1, not a NOT EXISTS, and
-- every other lookup of a device's bookings is written the same way: a
-- NOT EXISTS became an anti-join, and planned while device_bookings was one
-- page (a new or idle fleet, right after a vacuum) its inner side was an
-- index-only scan of the whole GiST index, which holds device_id and during,
-- rescanned for every device (the candidates query 4 times slower, and the
-- scan that damages the index). A sub-select stays a lookup keyed by the
-- device, and b.id, which the GiST index lacks, rules out its index-only
-- scan (TestBookingLookupsNeverUseTheGiSTIndex). Its ORDER BY is the btree's
-- second column, so a plain index scan is the cheap way to answer it: a
-- bitmap scan, which the planner otherwise picked on some connections,
-- never marks the entries of deleted bookings dead in the index, and every
-- later lookup of the device read them all again (the benchmark's hot spot
-- lost a tenth of its rate).
-- Every argument is a sub-select so that the planner does not see it:
-- seeing the node, the window and which of model and profile is NULL, it
-- found custom plans cheaper than the generic one on some connections, and
-- planned the statement at every placement there (185 µs, nine times its
-- run). The plan is the same either way.
SELECT a.id, a.parent_id, a.model FROM devices a LEFT JOIN devices p ON p.id = a.parent_id
 WHERE a.node_id = (SELECT sqlc.arg(node_id)::text) AND a.bookable AND a.kind = (SELECT sqlc.arg(kind)::text)
   AND ((SELECT sqlc.narg(model)::text) IS NULL OR a.model = (SELECT sqlc.narg(model)::text))
   AND ((SELECT sqlc.narg(profile)::text) IS NULL OR a.profile = (SELECT sqlc.narg(profile)::text))
   AND a.health = 'healthy' AND NOT a.quarantined
   AND (p.id IS NULL OR (p.health = 'healthy' AND NOT p.quarantined))
   AND (SELECT b.id FROM device_bookings b
                    WHERE b.device_id COLLATE "C" = a.id
                      AND coalesce(upper(b.during), 'infinity'::timestamptz) >= (SELECT sqlc.arg(from_ts)::timestamptz)
                      AND range_overlaps(b.during, tstzrange((SELECT sqlc.arg(from_ts)::timestamptz),
                                                            (SELECT sqlc.arg(to_ts)::timestamptz), '[)'))
                    ORDER BY coalesce(upper(b.during), 'infinity'::timestamptz) LIMIT 1) IS NULL
 ORDER BY a.id;

-- name: DeviceLockForBooking :many
-- Rule 4 for devices: the chosen atoms and their GPUs, locked in id order
-- and read as of the lock. Quarantine, health flips and mode changes update
-- these rows, so they serialise with the placement. FOR NO KEY UPDATE, not
-- FOR SHARE: two bookers of one device serialise here, so the second one's
-- DeviceBookingInsert sees the first one's booking through the btree even
-- if the GiST index behind the exclusion constraint lost it. (It does not
-- block the foreign-key checks of device_bookings, which take FOR KEY SHARE.)
-- profile and mig_uuid are what an assign tells the daemon of each atom
-- (AssignmentDevices), read here so that a booking needs no second read.
-- The ids are a sub-select so that the planner does not see them: seeing
-- one or two, it found every custom plan cheaper than the generic one and
-- planned the statement at every booking (more CPU than running it).
SELECT id, parent_id, node_id, kind, mode, bookable, retired, health, quarantined, profile, mig_uuid
  FROM devices WHERE id = ANY((SELECT sqlc.arg(ids)::text[])::text[])
 ORDER BY id FOR NO KEY UPDATE;

-- name: DeviceModelsNamedAlike :many
-- The models of the fleet's devices that name model alike: the same
-- letters and digits, case, spaces and punctuation aside. quotas.set reads
-- it to refuse a gpu:<model> quota that no device matches exactly but some
-- would if spelled as the inventory spells it ("h100-80gb" for
-- "H100-80GB"): such a quota would limit nothing. A walk of the distinct
-- models under the normalised name, one probe of devices_model_alike
-- (migration 0066) each, not a read of every device that has one: the
-- expression must stay the index's.
WITH RECURSIVE alike AS (
  SELECT min(d.model) AS model FROM devices d
   WHERE lower(regexp_replace(d.model, '[^A-Za-z0-9]', '', 'g'))
       = lower(regexp_replace(sqlc.arg(model)::text, '[^A-Za-z0-9]', '', 'g'))
  UNION ALL
  SELECT (SELECT min(d.model) FROM devices d
           WHERE lower(regexp_replace(d.model, '[^A-Za-z0-9]', '', 'g'))
               = lower(regexp_replace(sqlc.arg(model)::text, '[^A-Za-z0-9]', '', 'g'))
             AND d.model > a.model)
    FROM alike a WHERE a.model IS NOT NULL
)
SELECT alike.model::text AS model FROM alike WHERE alike.model IS NOT NULL;
