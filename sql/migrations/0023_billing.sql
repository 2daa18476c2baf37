-- +goose Up
-- Billing (docs/concepts/billing.md, issue 14 item 9).

-- What a usage window reserved, besides its atom count: the GPU request's
-- kind (gpu, mig or slot), model, MIG profile and slot kind, from the
-- reservation events (which carry them now). Rows written before are
-- filled by a rebuild of the usage-windows projection.
ALTER TABLE rm_usage_allocations
  ADD COLUMN gpu_kind text NOT NULL DEFAULT '',
  ADD COLUMN gpu_model text NOT NULL DEFAULT '',
  ADD COLUMN mig_profile text NOT NULL DEFAULT '',
  ADD COLUMN slot_kind text NOT NULL DEFAULT '';
ALTER TABLE rm_usage_windows
  ADD COLUMN gpu_kind text NOT NULL DEFAULT '',
  ADD COLUMN gpu_model text NOT NULL DEFAULT '',
  ADD COLUMN mig_profile text NOT NULL DEFAULT '',
  ADD COLUMN slot_kind text NOT NULL DEFAULT '';
CREATE INDEX rm_usage_windows_allocation ON rm_usage_windows (allocation_id);

-- The billing sink's attempts, one row per closed window it tried to
-- send, keyed cmp:<allocationId>:<windowStart> (the key the receiver
-- deduplicates by). What is durable is the sink's outbox cursor, which
-- passes an ended reservation only once every closed window of it was
-- accepted; these rows keep the retry schedule across restarts (the next
-- attempt is not before next_attempt_at, on compute_now()) and skip
-- windows already accepted when a batch is sent again. Not a read model:
-- a projection rebuild leaves it alone.
CREATE TABLE billing_deliveries (
  key             text PRIMARY KEY,
  allocation_id   text NOT NULL,
  tenant_id       text NOT NULL,
  window_start    timestamptz NOT NULL,
  attempts        int NOT NULL CHECK (attempts > 0),
  last_status     int,
  last_error      text NOT NULL DEFAULT '',
  next_attempt_at timestamptz NOT NULL,
  delivered_at    timestamptz,
  updated_at      timestamptz NOT NULL
);
CREATE INDEX billing_deliveries_undelivered ON billing_deliveries (next_attempt_at) WHERE delivered_at IS NULL;

-- +goose Down
DROP TABLE billing_deliveries;
DROP INDEX rm_usage_windows_allocation;
ALTER TABLE rm_usage_windows DROP COLUMN gpu_kind, DROP COLUMN gpu_model, DROP COLUMN mig_profile, DROP COLUMN slot_kind;
ALTER TABLE rm_usage_allocations DROP COLUMN gpu_kind, DROP COLUMN gpu_model, DROP COLUMN mig_profile, DROP COLUMN slot_kind;
