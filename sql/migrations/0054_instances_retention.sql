-- +goose Up
-- Retention of instances (docs/concepts/retention.md): the pruner deletes
-- an instance that ended (stopped, failed or succeeded) more than
-- COMPUTE_WORK_RETENTION ago, once its node jobs are gone. Before, every
-- instance stayed for ever.
--
-- An instance's updated_at is when it ended once it has: the provision
-- state table lets nothing out of an ending state, and InstanceUpdateState,
-- the only statement that changes an instance, refuses to touch one that
-- ended. So no column of its own, and nothing to backfill: instances that
-- ended before this migration are pruned by the time they ended.

-- Ended instances in the order they ended: each prune batch reads the
-- oldest ones from here instead of scanning every instance. Partial, so
-- live instances (the write path) carry no entry; an instance gets one when
-- it ends (its state changes then anyway, which already rules out a HOT
-- update: state is in instances_allocation_unfinished's predicate).
CREATE INDEX instances_ended ON instances (updated_at) WHERE state IN ('stopped', 'failed', 'succeeded');

-- The node jobs that carry out an instance (instance-start, instance-stop).
-- Deleting an instance makes PostgreSQL look for node_commands rows that
-- still reference it (the foreign key node_commands.instance_id), and the
-- prune skips an instance that has some: without this index each of those
-- lookups read all of node_commands, once per instance deleted (a batch of
-- 1,000 deletes with 190,000 node jobs: 37.7 s in the foreign key's
-- checks, against 7 to 10 ms with it). Partial: the jobs of no instance
-- (exec, wipe, deploy, assign, unassign) carry no entry.
CREATE INDEX node_commands_instance ON node_commands (instance_id) WHERE instance_id IS NOT NULL;

-- +goose Down
DROP INDEX node_commands_instance;
DROP INDEX instances_ended;
