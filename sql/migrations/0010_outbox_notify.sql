-- +goose Up
-- Pokes for outbox readers. Every statement that appends to the outbox sends
-- one NOTIFY on channel "outbox"; PostgreSQL delivers it at commit (never for
-- a rolled-back transaction) and folds duplicates within a transaction, so a
-- command that appends ten events wakes each listener once. The payload is
-- empty: a poke only says "read again", the reader finds out what is new.
-- Pokes are an optimisation: every dispatcher also polls, so a lost poke (a
-- listener reconnecting, PgBouncer in front) only delays delivery.
-- A trigger rather than a call in outbox.Append, so that every writer of the
-- outbox pokes, including ones that insert without going through Append.

-- +goose StatementBegin
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('outbox', '');
  RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
  FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- +goose Down
DROP TRIGGER outbox_notify ON outbox;
DROP FUNCTION outbox_notify();
