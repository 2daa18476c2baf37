-- +goose Up
-- Instances (instances.create) on a booked reservation: a workload the node
-- daemon starts and stops. The provision state table drives state:
-- requested → provisioning → running → stopping → stopped | failed.
-- The daemon carries an instance out through node commands
-- (instance-start, instance-stop), so instances inherit their fences:
-- once per key, session epochs, and no replay into a daemon that lost its
-- journal (a start is not retry-safe: the instance fails instead).
CREATE TABLE instances (
  id             text PRIMARY KEY,
  tenant_id      text NOT NULL,
  reservation_id text NOT NULL REFERENCES reservations,
  allocation_id  text NOT NULL REFERENCES allocations,
  node_id        text NOT NULL REFERENCES nodes,
  spec           jsonb NOT NULL DEFAULT '{}',
  state          text NOT NULL CHECK (state IN ('requested', 'provisioning', 'running', 'stopping', 'stopped', 'failed')),
  reason         text NOT NULL DEFAULT '',
  version        bigint NOT NULL DEFAULT 1 CHECK (version >= 1),
  created_at     timestamptz NOT NULL DEFAULT compute_now(),
  updated_at     timestamptz NOT NULL DEFAULT compute_now()
);
CREATE INDEX instances_reservation ON instances (reservation_id);

-- The instance a node command carries out, if any.
ALTER TABLE node_commands ADD COLUMN instance_id text REFERENCES instances;

-- +goose Down
ALTER TABLE node_commands DROP COLUMN instance_id;
DROP TABLE instances;
