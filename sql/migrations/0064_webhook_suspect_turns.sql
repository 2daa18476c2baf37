-- +goose Up
-- One line per tenant for its suspect deliveries (those of an endpoint that
-- is failing or has never answered) that found no slot: next_at is the
-- first turn not yet given out. A deferred suspect delivery takes the turn
-- at next_at (or a little later, when the line is empty) and moves next_at
-- on by how often the full scope frees a slot (the request timeout over
-- the slots it has), so a tenant whose endpoints hang is claimed about as
-- often as it can send, however long its backlog. Before, each deferred
-- delivery came back on its own every 7.5 to 15 s: 8 tenants with 220
-- deliveries each to hanging endpoints cost about 150 claims a second,
-- each read, refused a slot and put back, and a healthy tenant's
-- deliveries waited behind them in the oldest-first work queue.
-- The line is kept here, not in each process, so that every process
-- hands out turns of one line.
CREATE TABLE webhook_suspect_turns (
  tenant_id text PRIMARY KEY REFERENCES tenants ON DELETE CASCADE,
  next_at   timestamptz NOT NULL
);

-- +goose Down
DROP TABLE webhook_suspect_turns;
