-- name: RmFleetDeviceRegisterGPU :execrows
-- A gpu.registered event creates the GPU; a replay changes nothing.
INSERT INTO rm_fleet_devices (id, node_id, pool_id, parent_id, kind, model, mode, health, quarantined, version,
       mode_version, status_version)
VALUES (sqlc.arg(id), sqlc.arg(node_id), sqlc.arg(pool_id), NULL, 'gpu', sqlc.arg(model), sqlc.arg(mode),
        sqlc.arg(health), sqlc.arg(quarantined), sqlc.arg(version), sqlc.arg(version), sqlc.arg(version))
ON CONFLICT (id) DO NOTHING;

-- name: RmFleetDeviceUpsertAtom :exec
-- Writes a live atom of a GPU's current layout (bringing back a retired one
-- of the same id). Callers apply it only for a GPU event that was newer.
INSERT INTO rm_fleet_devices AS d (id, node_id, pool_id, parent_id, kind, model, profile, retired, version)
VALUES (sqlc.arg(id), sqlc.arg(node_id), sqlc.arg(pool_id), sqlc.arg(parent_id)::text, sqlc.arg(kind),
        sqlc.arg(model), sqlc.arg(profile)::text, false, sqlc.arg(version))
ON CONFLICT (id) DO UPDATE
   SET kind = EXCLUDED.kind, profile = EXCLUDED.profile, retired = false, version = EXCLUDED.version;

-- name: RmFleetDeviceSetMode :execrows
-- gpu.mode_changed on the GPU row, only when newer than the last mode
-- change applied (a GPU's events may come out of version order: migration
-- 0040); the caller then retires the old atoms and writes the new ones.
UPDATE rm_fleet_devices
   SET mode = sqlc.arg(mode), mode_version = sqlc.arg(version), version = greatest(version, sqlc.arg(version))
 WHERE id = sqlc.arg(id) AND kind = 'gpu' AND mode_version < sqlc.arg(version);

-- name: RmFleetDeviceRetireAtoms :exec
-- Retires the atoms of a GPU that its new layout does not have. Every atom
-- of the GPU, kept or retired, then carries the version of its newest
-- layout, which a rebuild's seed can tell from the write model
-- (RmFleetDeviceSeed).
UPDATE rm_fleet_devices SET retired = true, version = sqlc.arg(version)
 WHERE parent_id = sqlc.arg(parent_id)::text AND NOT (id = ANY(sqlc.arg(keep)::text[]));

-- name: RmFleetDeviceSetStatus :execrows
-- Quarantine and health events on a GPU carry both fields: applied when
-- newer than the last such event (migration 0040).
UPDATE rm_fleet_devices
   SET health = sqlc.arg(health), quarantined = sqlc.arg(quarantined), status_version = sqlc.arg(version),
       version = greatest(version, sqlc.arg(version))
 WHERE id = sqlc.arg(id) AND kind = 'gpu' AND status_version < sqlc.arg(version);

-- name: RmFleetDeviceListByNode :many
-- A node's devices, atoms with their GPU's health and quarantine. A GPU's
-- MIG support changes without events (the daemon's observation,
-- devices.mig_capable) and is read from the write model at read time.
SELECT d.id, d.node_id, d.pool_id, d.parent_id, d.kind, d.model, coalesce(d.mode, g.mode) AS mode, d.profile,
       d.retired, g.health, g.quarantined, g.version AS gpu_version, w.mig_capable
  FROM rm_fleet_devices d
  JOIN rm_fleet_devices g ON g.id = coalesce(d.parent_id, d.id)
  LEFT JOIN devices w ON w.id = d.id AND w.kind = 'gpu'
 WHERE d.node_id = sqlc.arg(node_id)
 ORDER BY d.id;

-- name: RmFleetDeviceGet :one
SELECT d.id, d.node_id, d.pool_id, d.parent_id, d.kind, d.model, d.mode, d.profile, d.retired, d.health,
       d.quarantined, d.version
  FROM rm_fleet_devices d WHERE d.id = sqlc.arg(id);

-- name: RmFleetDevicePoolSummary :many
-- A pool's bookable atoms by kind, model and profile: how many exist, how
-- many are schedulable, and how many live allocations hold. A retired
-- node has left the pool for good (retirement is terminal), so its devices
-- are not counted at all. Schedulable is what the placer would book today
-- (placement.Ineligible): a healthy, unquarantined GPU on a node that is
-- not cordoned, has no system reason against scheduling (draining,
-- unreachable…) and is not lost; taints are per reservation and not
-- counted. A draining or unreachable node's GPUs still exist, so they stay
-- in the total.
SELECT d.kind, d.model, coalesce(d.profile, '')::text AS profile,
       count(*)::bigint AS total,
       (count(*) FILTER (WHERE g.health = 'healthy' AND NOT g.quarantined AND NOT n.cordoned
                           AND cardinality(n.no_schedule_reasons) = 0 AND n.state <> 'lost'))::bigint AS schedulable,
       (count(*) FILTER (WHERE EXISTS (SELECT 1 FROM rm_fleet_allocations a
                                        WHERE a.pool_id = d.pool_id AND a.live AND d.id = ANY(a.device_ids))))::bigint AS allocated
  FROM rm_fleet_devices d
  JOIN rm_fleet_devices g ON g.id = coalesce(d.parent_id, d.id)
  JOIN rm_fleet_nodes n ON n.id = d.node_id
 WHERE d.pool_id = sqlc.arg(pool_id) AND NOT d.retired AND n.state <> 'retired'
   AND (d.kind <> 'gpu' OR d.mode = 'exclusive')
 GROUP BY d.kind, d.model, coalesce(d.profile, '')
 ORDER BY d.kind, d.model, 3;

-- name: RmFleetDeviceListAll :many
SELECT id, node_id, pool_id, parent_id, kind, model, mode, profile, retired, health, quarantined, version
  FROM rm_fleet_devices ORDER BY id;

-- name: RmFleetDeviceSeed :exec
-- A rebuild starts from the write model (projections.Seeder): every GPU at
-- its version, with its mode, health and quarantine, and every atom, live
-- or retired, of the GPU's layouts, on its node's pool. An atom carries the
-- version of the GPU's newest layout event (RmFleetDeviceUpsertAtom and
-- RmFleetDeviceRetireAtoms write it on every atom of the GPU); once that
-- event is pruned, the GPU's version. Nothing reads an atom's version.
INSERT INTO rm_fleet_devices (id, node_id, pool_id, parent_id, kind, model, mode, profile, retired, health,
       quarantined, version, mode_version, status_version)
SELECT d.id, d.node_id, n.pool_id, d.parent_id, d.kind, d.model, d.mode, d.profile, d.retired,
       CASE WHEN d.kind = 'gpu' THEN d.health ELSE 'healthy' END,
       d.kind = 'gpu' AND d.quarantined,
       CASE WHEN d.kind = 'gpu' THEN d.version ELSE coalesce(l.version, g.version) END,
       CASE WHEN d.kind = 'gpu' THEN d.version ELSE 0 END,
       CASE WHEN d.kind = 'gpu' THEN d.version ELSE 0 END
  FROM devices d
  JOIN nodes n ON n.id = d.node_id
  JOIN devices g ON g.id = coalesce(d.parent_id, d.id)
  LEFT JOIN (SELECT subject, max((data->>'version')::bigint) AS version
               FROM outbox WHERE type IN ('gpu.registered', 'gpu.mode_changed')
              GROUP BY subject) l ON l.subject = 'devices/' || g.id;
