-- name: NodeSessionRegister :exec
-- Called at registration. A node registered but never joined counts its
-- time without a session from its registration (its join, if it comes,
-- restarts the clock: NodeSessionEnsure).
INSERT INTO node_sessions (node_id, disconnected_since)
VALUES (sqlc.arg(node_id), compute_now())
ON CONFLICT (node_id) DO NOTHING;

-- name: NodeHasJoined :one
-- Whether the node was ever issued a credential.
SELECT EXISTS (SELECT 1 FROM node_credentials WHERE node_id = sqlc.arg(node_id)) AS joined;

-- name: DeviceListNodeGPUsForUpdate :many
-- A node's GPUs (not their atoms), locked in id order, for the inventory
-- reconcile. Taken after the node row (lock order: nodes, then devices);
-- the placer holds the GPU rows of the atoms it books FOR SHARE, so a GPU
-- marked missing here serialises with placements on it.
SELECT id, node_id, model, memory_mb, mode, health, quarantined, version, mig_capable
  FROM devices WHERE node_id = sqlc.arg(node_id) AND kind = 'gpu'
 ORDER BY id FOR UPDATE;

-- name: DeviceListNodeMIGAtoms :many
-- A node's live MIG atoms with the instance UUIDs recorded for them.
SELECT id, parent_id::text AS parent_id, coalesce(profile, '')::text AS profile, mig_uuid
  FROM devices WHERE node_id = sqlc.arg(node_id) AND kind = 'mig' AND NOT retired
 ORDER BY id;

-- name: DeviceSetMIGUUID :exec
-- Records (or clears) the MIG instance UUID a node's daemon reports for an
-- atom: an observation of the machine, not a transition (no version).
UPDATE devices SET mig_uuid = sqlc.narg(mig_uuid)::text WHERE id = sqlc.arg(id) AND kind = 'mig';

-- name: DeviceSetMIGCapable :execrows
-- Records whether a GPU can do MIG, as its node's daemon reports it: an
-- observation of the machine, not a transition (no version).
UPDATE devices SET mig_capable = sqlc.arg(mig_capable)
 WHERE id = sqlc.arg(id) AND kind = 'gpu' AND mig_capable IS DISTINCT FROM sqlc.arg(mig_capable);
