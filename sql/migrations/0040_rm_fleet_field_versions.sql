-- +goose Up
-- The node and device read models apply each event to the fields it
-- carries only when it is newer than the last event that wrote those
-- fields, by the aggregate's version. One version for the whole row was not
-- enough: the log orders events by transaction id, which a transaction takes
-- at its first write, so two commands on one node can appear in the log in
-- the opposite order of the versions they wrote (a taint at version 7 after
-- a drain at version 9). With one row version the older event was dropped
-- and its change (the taint) was lost from the read model for good; with a
-- version per group of fields, each group ends as the newest event that
-- wrote it left it, in whatever order the events come.
ALTER TABLE rm_fleet_nodes
  ADD COLUMN scheduling_version bigint NOT NULL DEFAULT 0, -- cordoned, taints
  ADD COLUMN state_version      bigint NOT NULL DEFAULT 0,
  ADD COLUMN reasons_version    bigint NOT NULL DEFAULT 0, -- no_schedule_reasons
  ADD COLUMN conditions_version bigint NOT NULL DEFAULT 0;
ALTER TABLE rm_fleet_devices
  ADD COLUMN mode_version   bigint NOT NULL DEFAULT 0, -- a GPU's mode and its atoms
  ADD COLUMN status_version bigint NOT NULL DEFAULT 0; -- a GPU's health, quarantined

-- Rows written so far may have lost such a change: take the fields from the
-- write model, at its version, so that no older event overwrites them.
UPDATE rm_fleet_nodes m
   SET cordoned = n.cordoned, taints = n.taints, state = n.state, no_schedule_reasons = n.no_schedule_reasons,
       conditions = n.conditions, version = greatest(m.version, n.version),
       scheduling_version = n.version, state_version = n.version, reasons_version = n.version,
       conditions_version = n.version
  FROM nodes n
 WHERE n.id = m.id;
UPDATE rm_fleet_devices m
   SET mode = d.mode, health = d.health, quarantined = d.quarantined, version = greatest(m.version, d.version),
       mode_version = d.version, status_version = d.version
  FROM devices d
 WHERE d.id = m.id AND d.kind = 'gpu';
UPDATE rm_fleet_devices m
   SET kind = d.kind, profile = d.profile, retired = d.retired
  FROM devices d
 WHERE d.id = m.id AND d.kind <> 'gpu';
INSERT INTO rm_fleet_devices (id, node_id, pool_id, parent_id, kind, model, profile, retired, version)
SELECT d.id, d.node_id, n.pool_id, d.parent_id, d.kind, d.model, d.profile, d.retired, g.version
  FROM devices d
  JOIN devices g ON g.id = d.parent_id
  JOIN nodes n ON n.id = d.node_id
 WHERE d.kind <> 'gpu' AND NOT d.retired
   AND EXISTS (SELECT 1 FROM rm_fleet_devices x WHERE x.id = d.parent_id)
ON CONFLICT (id) DO NOTHING;

-- +goose Down
ALTER TABLE rm_fleet_devices DROP COLUMN status_version, DROP COLUMN mode_version;
ALTER TABLE rm_fleet_nodes DROP COLUMN conditions_version, DROP COLUMN reasons_version,
  DROP COLUMN state_version, DROP COLUMN scheduling_version;
