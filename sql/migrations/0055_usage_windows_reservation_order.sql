-- +goose Up
-- One reservation's usage windows in list order (GET
-- /v1/billing/usage?reservationId=), so that a page reads the page. With
-- only (reservation_id), the planner sorted nothing and walked every
-- tenant's windows in (window_start, key) order through
-- rm_usage_windows_order until it met the reservation's: 7,015 rows for a
-- page of 5 in queries/TestTenantUsagePagesReadThePage. This index serves
-- what rm_usage_windows_reservation served (the projection's lookups by
-- reservation), which it replaces. A read model rebuilt before this
-- migration holds that index under a generated name, which IF EXISTS
-- leaves: a redundant index, no harm.
CREATE INDEX rm_usage_windows_reservation_order ON rm_usage_windows (reservation_id, window_start, key);
DROP INDEX IF EXISTS rm_usage_windows_reservation;

-- +goose Down
CREATE INDEX IF NOT EXISTS rm_usage_windows_reservation ON rm_usage_windows (reservation_id);
DROP INDEX rm_usage_windows_reservation_order;
