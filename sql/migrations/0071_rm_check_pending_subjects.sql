-- +goose Up
-- The subjects a projection has yet to apply an event of: those with an
-- event after its cursor (outbox_cursors, keyed by the projection's name,
-- which is its sink's). The read-model check of `compute check`
-- (sql/queries/rm_check.sql) counts a row that disagrees with the write
-- model as behind, not diverging, while its subject is one of these; each
-- of its queries reads the set here, so that "behind" has one definition.
-- Without a cursor (the projection never ran) every event is after it.
--
-- The events are read from the cursor on, (txid, seq) as outbox_position
-- orders them, so the set costs what the projection lags. The function is
-- LANGUAGE sql, STABLE, not STRICT and without SET clauses so that the
-- planner inlines it where a query calls it in FROM: the caller's plan
-- shows that scan, as it did when each query spelled it out, and the
-- caller's snapshot is the one it reads (the check's REPEATABLE READ
-- snapshot).
-- +goose StatementBegin
CREATE FUNCTION rm_check_pending_subjects(p_projection text)
RETURNS TABLE (subject text)
LANGUAGE sql STABLE AS $$
  WITH cur AS (
    SELECT coalesce(max(c.txid), '0'::xid8) AS txid, coalesce(max(c.seq), 0)::bigint AS seq
      FROM outbox_cursors c WHERE c.sink = p_projection)
  SELECT DISTINCT o.subject FROM outbox o, cur WHERE (o.txid, o.seq) > (cur.txid, cur.seq)
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION rm_check_pending_subjects(text);
