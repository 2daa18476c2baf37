-- +goose Up
-- An endpoint gets the events that follow its creation in the log, not
-- those before it that the scheduler happened to read after it committed.
-- The scheduler matched each event against the endpoints that existed when
-- it read the event: an endpoint registered during a burst of bookings got
-- the reservation events of the last 100 ms before it (and not those
-- before them), which a consumer could take for its starting point. The log
-- orders events by their transaction's id, then seq: every event of a
-- transaction whose id is at least the creating transaction's follows the
-- endpoint's webhook_endpoint.created, or is in its own transaction.
-- Endpoints made before this migration keep 0 (every event, as before):
-- the non-volatile default fills them without a rewrite, then new rows
-- get their creating transaction's id.
ALTER TABLE webhook_endpoints ADD COLUMN created_txid xid8 NOT NULL DEFAULT '0';
ALTER TABLE webhook_endpoints ALTER COLUMN created_txid SET DEFAULT pg_current_xact_id();

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN created_txid;
