-- +goose Up
-- reservations_max_length (0038) was added NOT VALID over reservations
-- that releases before it accepted with windows longer than 366 days. A
-- CHECK is evaluated on every new row version, not only when the window
-- changes, so each of those rows failed every later write of it: its
-- release, its activation, its expiry, its preemption, a drain of its node
-- (23514, "breaks the rule reservations_max_length"), and it could never
-- end. Such a window now keeps the end it had when this migration ran
-- (legacy_end) as its bound instead: it may shrink and change state, never
-- grow. Every other row is held to 366 days as before, and the constraint
-- is now valid for every row.
ALTER TABLE reservations DROP CONSTRAINT reservations_max_length; -- which the update would fail
ALTER TABLE reservations ADD COLUMN legacy_end timestamptz;
UPDATE reservations SET legacy_end = upper(during)
 WHERE upper(during) - lower(during) > interval '366 days';
-- coalesce: a NULL bound (every row within 366 days) must fail the
-- second term, not pass the CHECK as unknown.
ALTER TABLE reservations ADD CONSTRAINT reservations_max_length
  CHECK (upper(during) - lower(during) <= interval '366 days' OR coalesce(upper(during) <= legacy_end, false));

-- +goose Down
ALTER TABLE reservations DROP CONSTRAINT reservations_max_length;
ALTER TABLE reservations ADD CONSTRAINT reservations_max_length
  CHECK (upper(during) - lower(during) <= interval '366 days') NOT VALID;
ALTER TABLE reservations DROP COLUMN legacy_end;
