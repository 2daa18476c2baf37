-- +goose Up
-- A lease is a row, not an advisory lock: session-level advisory locks break
-- under PgBouncer's transaction pooling, and a row gives both a time to live
-- and an epoch. A takeover increments the epoch; fenced transactions start by
-- locking their lease row FOR SHARE at the epoch they hold.
CREATE TABLE leases (
  name       text PRIMARY KEY,
  owner      text NOT NULL,
  epoch      bigint NOT NULL CHECK (epoch > 0),
  expires_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE leases;
