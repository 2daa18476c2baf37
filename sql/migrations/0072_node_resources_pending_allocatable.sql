-- +goose Up
-- A smaller vCPU, memory or disk that a node's daemon reported while the
-- node's bookings held more than it gives (docs/concepts/nodes.md, "The vCPU,
-- memory and disk its operator configured"): remembered here until the
-- bookings fit it, when the node's periodic resync adopts it without a new
-- report. Meanwhile the placer books against the smaller of the two
-- (NodeResourceChargeMany), so that new bookings cannot keep the shrink from
-- ever fitting. Only a shrink waits: a grow always fits and is adopted at
-- once, so a pending value is always below the record's. NULL: none.
--
-- The column is added without a default (no rewrite) and every row is NULL,
-- so the CHECK's validation reads the table (three rows per node) without
-- finding anything to refuse.
ALTER TABLE node_resources
  ADD COLUMN pending_allocatable bigint,
  ADD CONSTRAINT node_resources_pending_is_a_shrink
    CHECK (pending_allocatable IS NULL OR (pending_allocatable >= 0 AND pending_allocatable < allocatable));

-- +goose Down
ALTER TABLE node_resources DROP CONSTRAINT IF EXISTS node_resources_pending_is_a_shrink,
  DROP COLUMN IF EXISTS pending_allocatable;
