-- +goose Up
-- Whether retention has pruned the log, and when it last did. The invariant
-- that every transition has its event (InvariantEventVersions) asks for
-- versions 1..version of each aggregate in the log; once a prefix of the
-- log is pruned, an aggregate's first events, or all of them, are gone on
-- purpose, and `compute check` must not call that a violation. One row,
-- written by each prune batch that deleted events.
CREATE TABLE outbox_pruned (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  last_at   timestamptz NOT NULL
);

-- +goose Down
DROP TABLE outbox_pruned;
