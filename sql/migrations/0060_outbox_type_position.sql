-- +goose NO TRANSACTION
-- +goose Up
-- An operator's events of some types after a cursor (GET /v1/events?types=
-- with an operator token, the event stream's catch-up with ?types=, compute
-- events list/tail --type) are read per type from this index, in position
-- order within each type, as a tenant's are from outbox_tenant_type_position
-- (0051), which cannot serve a read across tenants. Before, the read walked
-- the whole log through outbox_position and dropped the events of other
-- types: with a million events in the log, a page of a rare type (node.lost,
-- reservation.preempted) or of one that had none took 0.8 to 2 s.
--
-- Built CONCURRENTLY, outside a transaction, so that upgrading an
-- installation with a large log does not stop its writes: a plain CREATE
-- INDEX holds a lock that makes every command's outbox append wait for the
-- whole build (8 to 14 s per million events on two cores, measured in
-- docs/benchmarks.md); built concurrently it takes longer while appends go
-- on. It waits for the transactions running when it starts, which are
-- short (the migrations lock is a leased row, not a transaction). goose
-- runs a NO TRANSACTION migration statement by statement and records it
-- after the last one; an interrupted build leaves an invalid index behind
-- and no record, so the next start drops it and builds it again.
DROP INDEX CONCURRENTLY IF EXISTS outbox_type_position;
CREATE INDEX CONCURRENTLY outbox_type_position ON outbox (type, txid, seq);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS outbox_type_position;
