-- +goose Up
-- A reservation's window is at most 366 days long. The commands refuse a
-- longer one with a clear error (COMPUTE_MAX_RESERVATION_LENGTH, at most
-- this ceiling); the constraint is the authority behind them. Without a
-- bound, one window to year 9999 made the usage projection write one row
-- per hour of it (70 million) in one transaction, which held back every
-- tenant's events while it ran. NOT VALID: rows written before this
-- migration are not checked, every insert and update from now on is.
ALTER TABLE reservations ADD CONSTRAINT reservations_max_length
  CHECK (upper(during) - lower(during) <= interval '366 days') NOT VALID;

-- +goose Down
ALTER TABLE reservations DROP CONSTRAINT reservations_max_length;
