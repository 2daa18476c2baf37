-- +goose Up
-- The reservation resync (reservation.resync, every few minutes) scans the
-- live reservations for reconciler rows they lost. Finished reservations
-- are kept for ever, so the scan reads this partial index, whose size is
-- the live reservations only, instead of the whole table.
CREATE INDEX reservations_live ON reservations (state) WHERE state IN ('pending', 'booked', 'active');

-- +goose Down
DROP INDEX reservations_live;
