-- +goose Up
-- Retention (docs/concepts/retention.md): the pruning reconciler
-- (retention.prune) deletes history past its retention in batches. These
-- indexes let each batch find its rows without scanning what is kept, and
-- let `compute check` count what is overdue.

-- Attempts older than COMPUTE_WEBHOOK_ATTEMPT_RETENTION.
CREATE INDEX webhook_attempts_at ON webhook_attempts (at);
-- Finished deliveries older than COMPUTE_WORK_RETENTION.
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (updated_at) WHERE state <> 'pending';
-- An event with a delivery still pending is never pruned: one lookup per
-- candidate event.
CREATE INDEX webhook_deliveries_pending_event ON webhook_deliveries (event_id) WHERE state = 'pending';
-- Finished node jobs older than COMPUTE_WORK_RETENTION (created_at bounds
-- finished_at from below, so the range holds every candidate).
CREATE INDEX node_commands_created ON node_commands (created_at);

-- +goose Down
DROP INDEX node_commands_created;
DROP INDEX webhook_deliveries_pending_event;
DROP INDEX webhook_deliveries_finished;
DROP INDEX webhook_attempts_at;
