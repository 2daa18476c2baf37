-- +goose Up
-- The read-model check of `compute check` (sql/queries/rm_check.sql) reads
-- each projection's cursor first, then passes it to the query that compares
-- that projection's read model, so that PostgreSQL plans the scan of the log
-- knowing where it starts. rm_check_pending_subjects(text) read the cursor
-- inside each query (0071): the planner then assumed a third of the log lay
-- after it, and with the read models caught up it often read the whole of
-- outbox_subject_position to find nothing (docs/benchmarks.md, "Rebuilding
-- a read model over a large log").
--
-- rm_check_cursor is where a projection's cursor is read: its row of
-- outbox_cursors (keyed by the projection's name, which is its sink's), or,
-- for a projection that never ran, the position before every event. One
-- row always.
-- +goose StatementBegin
CREATE FUNCTION rm_check_cursor(p_projection text)
RETURNS TABLE (txid xid8, seq bigint)
LANGUAGE sql STABLE AS $$
  SELECT coalesce(max(c.txid), '0'::xid8), coalesce(max(c.seq), 0)::bigint
    FROM outbox_cursors c WHERE c.sink = p_projection
$$;
-- +goose StatementEnd

-- The one definition of "behind": the subjects with an event after the
-- cursor (p_after_txid, p_after_seq), in outbox_position's order, so the set
-- costs what the projection lags. A row that disagrees with the write model
-- is behind, not diverging, while its subject is one of these. LANGUAGE sql,
-- STABLE, not STRICT and without SET clauses so that the planner inlines it
-- where a query calls it in FROM: the caller's plan shows the scan, the
-- caller's snapshot is the one it reads, and a custom plan of the caller
-- sees the cursor's values.
-- +goose StatementBegin
CREATE FUNCTION rm_check_pending_subjects(p_after_txid xid8, p_after_seq bigint)
RETURNS TABLE (subject text)
LANGUAGE sql STABLE AS $$
  SELECT DISTINCT o.subject FROM outbox o WHERE (o.txid, o.seq) > (p_after_txid, p_after_seq)
$$;
-- +goose StatementEnd

-- The projection's name as 0071 took it, kept for the check of a process of
-- the earlier release still running on the migrated database: the same set,
-- from the two functions above. Nothing of this release calls it.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rm_check_pending_subjects(p_projection text)
RETURNS TABLE (subject text)
LANGUAGE sql STABLE AS $$
  SELECT p.subject FROM rm_check_cursor(p_projection) c, rm_check_pending_subjects(c.txid, c.seq) p
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rm_check_pending_subjects(p_projection text)
RETURNS TABLE (subject text)
LANGUAGE sql STABLE AS $$
  WITH cur AS (
    SELECT coalesce(max(c.txid), '0'::xid8) AS txid, coalesce(max(c.seq), 0)::bigint AS seq
      FROM outbox_cursors c WHERE c.sink = p_projection)
  SELECT DISTINCT o.subject FROM outbox o, cur WHERE (o.txid, o.seq) > (cur.txid, cur.seq)
$$;
-- +goose StatementEnd
DROP FUNCTION rm_check_pending_subjects(xid8, bigint);
DROP FUNCTION rm_check_cursor(text);
