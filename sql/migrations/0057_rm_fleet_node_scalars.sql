-- +goose Up
-- A node's vCPU, memory and disk change after its registration when its
-- daemon reports other configured values that its bookings fit
-- (node.inventory_reconciled carries them). Like the other groups of
-- fields (migration 0040) they are written only by an event newer than the
-- last that wrote them. Rows so far hold the registration's, at version 1.
ALTER TABLE rm_fleet_nodes ADD COLUMN scalars_version bigint NOT NULL DEFAULT 1;

-- +goose Down
ALTER TABLE rm_fleet_nodes DROP COLUMN scalars_version;
