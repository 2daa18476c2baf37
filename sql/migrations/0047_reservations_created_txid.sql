-- +goose Up
-- The transaction that created each reservation, so that a rebuild of the
-- reservations read model can start from the write model
-- (projections.Reservations.Seed): the list of reservations, and its
-- cursors, are ordered by the position (txid, seq) of each reservation's
-- creating event, and every reservation is created in a transaction of its
-- own, so its creation transaction alone orders it against every other one
-- once retention pruned that event. ReservationCreate names it; the default
-- covers a release still running during a rolling upgrade, whose create
-- does not. Nullable, added without a default first: no table rewrite, and
-- the rows written before this migration are backfilled below.
ALTER TABLE reservations ADD COLUMN created_txid xid8;
ALTER TABLE reservations ALTER COLUMN created_txid SET DEFAULT pg_current_xact_id();

-- The creating event (version 1) where the log still holds it.
UPDATE reservations r SET created_txid = o.txid
  FROM outbox o
 WHERE o.subject = 'reservations/' || r.id AND o.type LIKE 'reservation.%'
   AND (o.data->>'version')::bigint = 1;
-- Else the read model's position, when no other row has its transaction:
-- after a rebuild from a pruned log (before this migration) a row's
-- position may be that of a later event, in a transaction that wrote other
-- reservations' events too, and two rows sharing a transaction could not
-- both be ordered by it. Those, and reservations the read model lacks,
-- stay NULL: a rebuild lists them first (Seed).
UPDATE reservations r SET created_txid = m.created_txid
  FROM rm_reservations m
 WHERE m.id = r.id AND r.created_txid IS NULL
   AND NOT EXISTS (SELECT 1 FROM rm_reservations x WHERE x.created_txid = m.created_txid AND x.id <> m.id)
   AND NOT EXISTS (SELECT 1 FROM reservations x WHERE x.created_txid = m.created_txid);

-- +goose Down
ALTER TABLE reservations DROP COLUMN created_txid;
