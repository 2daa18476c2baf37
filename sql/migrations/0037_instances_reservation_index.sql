-- +goose Up
-- GET /v1/instances?reservationId= pages through a reservation's instances
-- in id order: the index on reservation_id gains id, so that a page is one
-- range scan in order however many instances a reservation has had. It
-- serves the lookups by reservation_id as before.
DROP INDEX instances_reservation;
CREATE INDEX instances_reservation ON instances (reservation_id, id);

-- +goose Down
DROP INDEX instances_reservation;
CREATE INDEX instances_reservation ON instances (reservation_id);
