-- +goose Up
-- A tenant's events of some types after a cursor (GET /v1/events?types=,
-- the event stream's catch-up with ?types=) are read per type from this
-- index, in position order within each (tenant, type), so a page costs a
-- few index entries per type asked for. Through outbox_tenant_position
-- alone the read walked every event of the tenant after the cursor and
-- dropped those of other types: with a million of its events in the log, a
-- page of a catalog type it had none of took 0.8 to 1.8 s, and a dozen such
-- requests at once held the connections and the CPU every tenant's
-- requests share. Building it takes about 4 s per million events, during
-- which appends wait.
CREATE INDEX outbox_tenant_type_position ON outbox (tenant_id, type, txid, seq);

-- A tenant's reservations in one state (GET /v1/reservations?state=), in
-- creation order, so that a page reads the page: through
-- rm_reservations_tenant the list read every reservation the tenant ever
-- had (ended ones are kept for ever) to find the few active ones, 0.2 to
-- 0.5 s with 200,000 of them, on the API's read pool of two connections.
CREATE INDEX rm_reservations_tenant_state ON rm_reservations (tenant_id, state, created_txid, created_seq);

-- A tenant's pending reservations, counted by a create that ends pending
-- against COMPUTE_MAX_PENDING_RESERVATIONS (ReservationCountPendingOfTenant).
CREATE INDEX reservations_pending_tenant ON reservations (tenant_id) WHERE state = 'pending';

-- +goose Down
DROP INDEX reservations_pending_tenant;
DROP INDEX rm_reservations_tenant_state;
DROP INDEX outbox_tenant_type_position;
