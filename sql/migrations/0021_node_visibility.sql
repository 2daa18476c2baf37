-- +goose Up
-- Node visibility and inventory (issue 12, items 6 and 7).

-- A GPU that the node's daemon no longer reports is 'missing': like an
-- unhealthy one it leaves placement (every placement query asks for
-- health = 'healthy'), and it becomes healthy again when the daemon reports
-- it. The machine decides what exists; the control plane who holds it.
ALTER TABLE devices DROP CONSTRAINT devices_health_check;
ALTER TABLE devices ADD CONSTRAINT devices_health_check CHECK (health IN ('healthy', 'unhealthy', 'missing'));

-- A node registered but never joined counts its time without a session
-- from its registration (RegisterNode now writes its node_sessions row):
-- nodes registered before this migration get theirs, from when they were
-- registered.
INSERT INTO node_sessions (node_id, disconnected_since)
SELECT n.id, n.created_at FROM nodes n
 WHERE n.state = 'registered' AND NOT EXISTS (SELECT 1 FROM node_sessions s WHERE s.node_id = n.id);

-- The node read model shows liveness: the node's state, its no-schedule
-- reasons and conditions, from the node's liveness, drain, retire and
-- inventory events. (Heartbeat age and generations change without events;
-- queries read them from node_sessions and nodes at read time.)
ALTER TABLE rm_fleet_nodes
  ADD COLUMN state text NOT NULL DEFAULT 'registered',
  ADD COLUMN no_schedule_reasons text[] NOT NULL DEFAULT '{}',
  ADD COLUMN conditions jsonb NOT NULL DEFAULT '[]';

-- Rows written before the read model projected those events: the values a
-- replay of the log gives, which are the write model's.
UPDATE rm_fleet_nodes m
   SET state = n.state, no_schedule_reasons = n.no_schedule_reasons, conditions = n.conditions,
       cordoned = n.cordoned, taints = n.taints, version = n.version
  FROM nodes n
 WHERE n.id = m.id AND m.version < n.version;

-- +goose Down
ALTER TABLE rm_fleet_nodes DROP COLUMN conditions, DROP COLUMN no_schedule_reasons, DROP COLUMN state;
DELETE FROM node_sessions s
 WHERE s.session_epoch = 0 AND NOT EXISTS (SELECT 1 FROM node_credentials c WHERE c.node_id = s.node_id);
UPDATE devices SET health = 'unhealthy' WHERE health = 'missing';
ALTER TABLE devices DROP CONSTRAINT devices_health_check;
ALTER TABLE devices ADD CONSTRAINT devices_health_check CHECK (health IN ('healthy', 'unhealthy'));
