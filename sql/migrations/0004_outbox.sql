-- +goose Up
-- The outbox is the event log. Rows are appended in the transaction that made
-- the change they describe; readers take only rows whose txid is older than
-- every running transaction (pg_snapshot_xmin), in (txid, seq) order, so no
-- row can ever appear behind a reader's cursor.
CREATE TABLE outbox (
  id        uuid PRIMARY KEY,
  txid      xid8 NOT NULL DEFAULT pg_current_xact_id(),
  seq       bigserial NOT NULL,
  type      text NOT NULL CHECK (type <> ''),
  tenant_id text,
  subject   text NOT NULL,
  data      jsonb NOT NULL,
  time      timestamptz NOT NULL DEFAULT compute_now()
);
CREATE UNIQUE INDEX outbox_position ON outbox (txid, seq);

-- One row per durable sink: the position after which it has not delivered.
CREATE TABLE outbox_cursors (
  sink       text PRIMARY KEY,
  txid       xid8 NOT NULL DEFAULT '0',
  seq        bigint NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT compute_now()
);

-- +goose Down
DROP TABLE outbox_cursors;
DROP TABLE outbox;
