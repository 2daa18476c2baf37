-- +goose Up
-- An instance whose process ends on its own is reported with its exit code
-- (wire.InstanceStopped.Exited): 0 ends it succeeded, anything else failed.
-- exit_code is NULL for an instance that has not exited (still running, or
-- stopped by its daemon).
ALTER TABLE instances ADD COLUMN exit_code integer;
ALTER TABLE instances DROP CONSTRAINT instances_state_check;
ALTER TABLE instances ADD CONSTRAINT instances_state_check
  CHECK (state IN ('requested', 'provisioning', 'running', 'stopping', 'stopped', 'failed', 'succeeded'));

-- +goose Down
ALTER TABLE instances DROP CONSTRAINT instances_state_check;
ALTER TABLE instances ADD CONSTRAINT instances_state_check
  CHECK (state IN ('requested', 'provisioning', 'running', 'stopping', 'stopped', 'failed'));
ALTER TABLE instances DROP COLUMN exit_code;
