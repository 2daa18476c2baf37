-- +goose NO TRANSACTION
-- +goose Up
-- What happened to one thing, a reservation say (GET /v1/events?subject=,
-- compute events list --subject, the console's reservation page), is read
-- from this index: the subject's events after a cursor in position order,
-- a tenant's filtered to its own. Without it the only way to a subject's
-- events was to page through the caller's whole log and keep the subject's:
-- the console read ten pages of reservation events and showed no history
-- for a reservation beyond them.
--
-- One more B-tree insert per appended event (docs/benchmarks.md, Reading
-- one subject's events). Built CONCURRENTLY, as 0060: a plain CREATE INDEX
-- would stop every outbox append for the whole build on a large log. An
-- interrupted build leaves an invalid index and no goose record, so the
-- next start drops it and builds it again.
DROP INDEX CONCURRENTLY IF EXISTS outbox_subject_position;
CREATE INDEX CONCURRENTLY outbox_subject_position ON outbox (subject, txid, seq);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS outbox_subject_position;
