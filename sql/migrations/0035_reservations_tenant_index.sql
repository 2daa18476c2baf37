-- +goose Up
-- reservations_tenant (tenant_id, id) served lookups of a tenant's
-- reservations; reservations_tenant_end (tenant_id, upper(during)), added
-- for fair share, leads with the same column and serves them as well. Every
-- reservation's insert and every change of its state (a new row version,
-- since the state is indexed) wrote both; one is enough (issue 25).
DROP INDEX reservations_tenant;

-- +goose Down
CREATE INDEX reservations_tenant ON reservations (tenant_id, id);
