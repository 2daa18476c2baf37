-- +goose Up
-- A suspended tenant gets no new capacity from its pending reservations
-- either (docs/concepts/tenant-suspension.md): placing one, the transition
-- from pending to booked, runs the suspension guard of 0065. The guard
-- reads the tenant row FOR KEY SHARE, which waits for a suspend in progress
-- (it holds the row FOR UPDATE), so a placement racing a suspend either
-- committed first (the suspend finds the reservation booked, one of the
-- tenant's existing reservations) or is refused, and its transaction,
-- bookings and any preemption it made included, rolls back. The ordinary
-- create inserts a reservation booked or pending and never runs this
-- trigger; the WHEN clause keeps it off every other transition.
CREATE TRIGGER reservations_place_tenant_not_suspended BEFORE UPDATE OF state ON reservations
  FOR EACH ROW WHEN (OLD.state = 'pending' AND NEW.state = 'booked')
  EXECUTE FUNCTION tenant_refuse_suspended();

-- +goose Down
DROP TRIGGER reservations_place_tenant_not_suspended ON reservations;
