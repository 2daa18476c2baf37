-- +goose Up
-- Reconcilers are woken through work_queue rows enqueued in the transaction
-- that changed the state. gen counts how often a key was dirtied: a worker
-- deletes its row only if gen is unchanged since it claimed it, so a key
-- dirtied during its run survives and runs again.
CREATE TABLE work_queue (
  kind          text NOT NULL,
  key           text NOT NULL,
  shard         int NOT NULL CHECK (shard >= 0),
  gen           bigint NOT NULL DEFAULT 1,
  not_before    timestamptz NOT NULL,
  claimed_until timestamptz,
  claimed_by    text,
  attempts      int NOT NULL DEFAULT 0,
  last_error    text,
  PRIMARY KEY (kind, key)
);
CREATE INDEX work_queue_due ON work_queue (shard, not_before);

-- +goose Down
DROP TABLE work_queue;
