-- +goose Up
-- Assignments reach the machine (issue 12, items 1, 2, 4 and 5): each node
-- has a desired spec (its assignments and its scheduling flags) with a
-- generation, and every allocation reaches its node's daemon as an "assign"
-- node job and leaves it as an "unassign" job.

-- The desired spec's generation, one row per node that ever changed. Every
-- change bumps it in the transaction of the change: an assign or unassign
-- queued (booking, extension, release, cancel, expiry, node release,
-- reconcile and resync re-pushes) and a scheduling-flag change (cordon,
-- taint, drain, quarantine, health, and their reverses). It is not a column
-- of nodes because the placer holds the node row FOR SHARE while it books:
-- two placements updating that row would deadlock (see node_resources).
-- No row means generation 0. Lock order: node_desired comes last, after
-- node_resources and pool_capacity_rollup.
CREATE TABLE node_desired (
  node_id    text PRIMARY KEY REFERENCES nodes,
  generation bigint NOT NULL CHECK (generation > 0),
  updated_at timestamptz NOT NULL DEFAULT compute_now()
);

-- nodes.generation was never written; node_desired replaces it.
ALTER TABLE nodes DROP COLUMN generation;

-- Assign and unassign are node jobs. They carry the desired generation they
-- belong to; the daemon reports the highest it accepted, and node_sessions.
-- observed_generation is kept from its reports and the jobs' outcomes.
ALTER TABLE node_commands DROP CONSTRAINT node_commands_kind_check;
ALTER TABLE node_commands ADD CONSTRAINT node_commands_kind_check
  CHECK (kind IN ('exec', 'wipe', 'deploy', 'instance-start', 'instance-stop', 'assign', 'unassign'));
ALTER TABLE node_commands ADD COLUMN generation bigint CHECK (generation > 0);
ALTER TABLE node_commands ADD CONSTRAINT node_commands_generation_of_assignments
  CHECK ((kind IN ('assign', 'unassign')) = (generation IS NOT NULL));
-- An assign is always of a known allocation. An unassign may not be: a
-- daemon can report an allocation the control plane never had (a journal
-- from elsewhere), which is unassigned by the id in its payload, as a
-- fleet job (tenant '').
ALTER TABLE node_commands ADD CONSTRAINT node_commands_assign_allocation
  CHECK (kind <> 'assign' OR allocation_id IS NOT NULL);
-- The order jobs were queued in. created_at is compute_now(), the same for
-- every job of one transaction (and for every job while the simulated
-- clock stands still); dispatch sends a node's jobs in seq order, so that
-- an allocation's assign goes before the instance-start queued after it.
ALTER TABLE node_commands ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
-- A node's assignment jobs, per allocation in order: reconcile and resync
-- read them.
CREATE INDEX node_commands_assignments ON node_commands (node_id, allocation_id, seq)
  WHERE kind IN ('assign', 'unassign');

-- A MIG atom's instance UUID (MIG-…), as the node's daemon reports it: what
-- CUDA_VISIBLE_DEVICES names for that atom. NULL until an inventory names
-- it; the assignment then carries the atom's id.
ALTER TABLE devices ADD COLUMN mig_uuid text CHECK (mig_uuid IS NULL OR (kind = 'mig' AND mig_uuid <> ''));

-- When a reservation ends, its allocation's unfinished instances stop.
CREATE INDEX instances_allocation_unfinished ON instances (allocation_id)
  WHERE state IN ('requested', 'provisioning', 'running', 'stopping');

-- +goose Down
DROP INDEX instances_allocation_unfinished;
ALTER TABLE devices DROP COLUMN mig_uuid;
DROP INDEX node_commands_assignments;
ALTER TABLE node_commands DROP COLUMN seq;
DELETE FROM node_commands WHERE kind IN ('assign', 'unassign');
ALTER TABLE node_commands DROP CONSTRAINT node_commands_assign_allocation;
ALTER TABLE node_commands DROP CONSTRAINT node_commands_generation_of_assignments;
ALTER TABLE node_commands DROP COLUMN generation;
ALTER TABLE node_commands DROP CONSTRAINT node_commands_kind_check;
ALTER TABLE node_commands ADD CONSTRAINT node_commands_kind_check
  CHECK (kind IN ('exec', 'wipe', 'deploy', 'instance-start', 'instance-stop'));
ALTER TABLE nodes ADD COLUMN generation bigint NOT NULL DEFAULT 1 CHECK (generation > 0);
DROP TABLE node_desired;
