-- +goose Up
-- Tenant-scoped reads of the event log (GET /v1/events, the SSE catch-up)
-- are keyset scans on (txid, seq) within one tenant. Without this index
-- they would walk every tenant's rows through outbox_position and filter,
-- so one tenant's read would cost in proportion to the whole fleet's log.
CREATE INDEX outbox_tenant_position ON outbox (tenant_id, txid, seq);

-- +goose Down
DROP INDEX outbox_tenant_position;
