-- +goose Up
-- The pruner deletes the record of billing windows accepted longer ago
-- than COMPUTE_WORK_RETENTION, oldest first (RetentionBillingDeliveriesPrune),
-- every 10 minutes: an index on when they were accepted keeps that a range
-- scan, not a read of the whole table.
CREATE INDEX billing_deliveries_accepted ON billing_deliveries (delivered_at) WHERE delivered_at IS NOT NULL;

-- +goose Down
DROP INDEX billing_deliveries_accepted;
