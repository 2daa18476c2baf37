-- +goose Up
-- Every tenant's reservations in one state (an operator's GET
-- /v1/reservations?state=, which the console's "live" view asks for three
-- states at a time), in creation order, so that a page reads the page:
-- without it the list walked every reservation ever made in creation order
-- and filtered, the ended ones included (they are kept for ever): 12,000
-- rows for a page of 5 active ones among 20,000 in
-- queries/TestTenantReservationPagesReadThePage. The projection writes it
-- as it writes rm_reservations_tenant_state: a change of state is not a
-- HOT update already.
CREATE INDEX rm_reservations_state ON rm_reservations (state, created_txid, created_seq);

-- +goose Down
DROP INDEX rm_reservations_state;
