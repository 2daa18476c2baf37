-- +goose Up
-- Appending transactions no longer NOTIFY. A transaction that has queued a
-- notification takes a database-wide lock before it commits and holds it
-- until its commit record is flushed, so every appending commit waited for
-- the one before it and group commit was lost: 8 unpaced writers appended
-- at 0.56x the rate they reached without the trigger. The poke now comes
-- from outbox.Notifier, after the commit and outside the transaction, at
-- most one per process per few milliseconds (docs/decisions/0008).
DROP TRIGGER outbox_notify ON outbox;
DROP FUNCTION outbox_notify();

-- +goose Down
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
