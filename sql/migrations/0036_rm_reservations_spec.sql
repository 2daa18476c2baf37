-- +goose Up
-- The list of reservations shows what each asked for (GPUs, vCPU, memory,
-- disk), as a reservation's detail does: the read model keeps the request,
-- copied from the reservation events, which carry it. Rows projected before
-- take it from the write model once, here.
ALTER TABLE rm_reservations ADD COLUMN spec jsonb NOT NULL DEFAULT '{}';
UPDATE rm_reservations r SET spec = w.spec FROM reservations w WHERE w.id = r.id;

-- +goose Down
ALTER TABLE rm_reservations DROP COLUMN spec;
