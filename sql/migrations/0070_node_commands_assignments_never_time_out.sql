-- +goose NO TRANSACTION
-- +goose Up
-- The liveness sweep times out node jobs that a node away for good can no
-- longer answer (docs/concepts/nodes.md, "Jobs of a node that is away"),
-- but never an assign or unassign: a kept unassign is what stops a
-- released allocation's workloads when the daemon comes back, and an
-- assign's outcome moves the node's observed generation. The statement
-- that times jobs out refuses them; this constraint holds every other
-- writer to the same rule.
--
-- Added NOT VALID, then validated, each in its own transaction: the ADD
-- takes its ACCESS EXCLUSIVE lock only for a moment, and the validation
-- reads the table (one row per node job of the work retention) under a
-- lock that lets dispatch and the daemons' reports go on. Dropped first so
-- that a run interrupted between the two starts again.
ALTER TABLE node_commands DROP CONSTRAINT IF EXISTS node_commands_assignments_never_time_out;
ALTER TABLE node_commands ADD CONSTRAINT node_commands_assignments_never_time_out
  CHECK (state <> 'timed-out' OR kind NOT IN ('assign', 'unassign')) NOT VALID;
ALTER TABLE node_commands VALIDATE CONSTRAINT node_commands_assignments_never_time_out;

-- +goose Down
ALTER TABLE node_commands DROP CONSTRAINT IF EXISTS node_commands_assignments_never_time_out;
