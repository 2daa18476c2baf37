-- name: OutboxReadAfterForTenant :many
-- Queries of the public event API (GET /v1/events and the SSE stream) have
-- the shape of OutboxReadAfter: only rows below the snapshot xmin, strictly
-- after the cursor, as a keyset scan, so a late commit is never skipped and
-- the cost does not grow with the backlog.
-- One tenant's events after the cursor, optionally only some types (an
-- empty array means every type). Uses outbox_tenant_position
-- (tenant_id, txid, seq): the scan touches this tenant's rows only. With
-- types, the reader uses OutboxReadAfterForTenantOfTypes instead: here a
-- type the tenant has few events of would walk all of them.
SELECT id, txid, seq, type, tenant_id, subject, data, time
  FROM outbox o
 WHERE o.txid < pg_snapshot_xmin(pg_current_snapshot())
   AND o.tenant_id = sqlc.arg(tenant_id)::text
   AND (o.txid, o.seq) > (sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint)
   AND (cardinality(sqlc.arg(types)::text[]) = 0 OR o.type = ANY (sqlc.arg(types)::text[]))
 ORDER BY o.txid, o.seq
 LIMIT sqlc.arg(max_rows);

-- name: OutboxReadAfterForTenantOfTypes :many
-- One tenant's events of the given types after the cursor: the first
-- max_rows of each type from outbox_tenant_type_position, merged in log
-- order, so a page costs at most max_rows index entries per type however
-- many of the tenant's events of other types lie in between. The inner
-- scan bounds the type by comparisons and orders by it, rather than
-- type =: with type = the order is (txid, seq) alone, which
-- outbox_position and outbox_tenant_position give too, and a planner that
-- cannot tell how rare the type is (it comes from the array; a cached
-- generic plan knows neither it nor the tenant) may walk one of those and
-- filter, every event of the tenant or of the whole log. Ordered by type
-- first, only this index gives the order.
SELECT o.id, o.txid, o.seq, o.type, o.tenant_id, o.subject, o.data, o.time
  FROM (SELECT DISTINCT unnest(sqlc.arg(types)::text[]) AS type) t
 CROSS JOIN LATERAL (
       SELECT x.id, x.txid, x.seq, x.type, x.tenant_id, x.subject, x.data, x.time
         FROM outbox x
        WHERE x.tenant_id = sqlc.arg(tenant_id)::text
          AND (x.type, x.txid, x.seq) > (t.type, sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint)
          AND x.type <= t.type
          AND x.txid < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY x.type, x.txid, x.seq
        LIMIT sqlc.arg(max_rows)) o
 ORDER BY o.txid, o.seq
 LIMIT sqlc.arg(max_rows);

-- name: OutboxReadAfterOfTypes :many
-- Every tenant's events after the cursor (operators), optionally only some
-- types (an empty array means every type). Keyset scan on outbox_position.
-- With types, the reader uses OutboxReadAfterAllTenantsOfTypes instead:
-- here a type with few events in the log would walk the whole log.
SELECT id, txid, seq, type, tenant_id, subject, data, time
  FROM outbox o
 WHERE o.txid < pg_snapshot_xmin(pg_current_snapshot())
   AND (o.txid, o.seq) > (sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint)
   AND (cardinality(sqlc.arg(types)::text[]) = 0 OR o.type = ANY (sqlc.arg(types)::text[]))
 ORDER BY o.txid, o.seq
 LIMIT sqlc.arg(max_rows);

-- name: OutboxReadAfterAllTenantsOfTypes :many
-- Every tenant's events of the given types after the cursor (operators):
-- the first max_rows of each type from outbox_type_position, merged in log
-- order, so a page costs at most max_rows index entries per type however
-- many events of other types lie in between. The shape of
-- OutboxReadAfterForTenantOfTypes, for the same reason: ordered by type
-- first, only this index gives the order, so no plan (a cached generic one
-- included) walks outbox_position and filters.
SELECT o.id, o.txid, o.seq, o.type, o.tenant_id, o.subject, o.data, o.time
  FROM (SELECT DISTINCT unnest(sqlc.arg(types)::text[]) AS type) t
 CROSS JOIN LATERAL (
       SELECT x.id, x.txid, x.seq, x.type, x.tenant_id, x.subject, x.data, x.time
         FROM outbox x
        WHERE (x.type, x.txid, x.seq) > (t.type, sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint)
          AND x.type <= t.type
          AND x.txid < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY x.type, x.txid, x.seq
        LIMIT sqlc.arg(max_rows)) o
 ORDER BY o.txid, o.seq
 LIMIT sqlc.arg(max_rows);

-- name: OutboxReadAfterOfSubject :many
-- One subject's events after the cursor (GET /v1/events?subject=), of every
-- tenant (operators, an empty tenant_id) or of one tenant, optionally only
-- some types (an empty array means every type). Walks outbox_subject_position
-- (subject, txid, seq): a page costs the subject's events after the cursor,
-- however long the log. A tenant's read drops the subject's events of other
-- tenants after reading them, so asking for another tenant's subject costs
-- that subject's events and returns none. The subject is bounded by
-- comparisons and the order starts with it, as in
-- OutboxReadAfterForTenantOfTypes: only this index gives that order, so no
-- plan (a cached generic one, which knows neither the subject nor how rare
-- it is, included) walks outbox_position or outbox_tenant_position and
-- filters.
SELECT o.id, o.txid, o.seq, o.type, o.tenant_id, o.subject, o.data, o.time
  FROM outbox o
 WHERE (o.subject, o.txid, o.seq) > (sqlc.arg(subject)::text, sqlc.arg(after_txid)::xid8, sqlc.arg(after_seq)::bigint)
   AND o.subject <= sqlc.arg(subject)::text
   AND o.txid < pg_snapshot_xmin(pg_current_snapshot())
   AND (sqlc.arg(tenant_id)::text = '' OR o.tenant_id = sqlc.arg(tenant_id)::text)
   AND (cardinality(sqlc.arg(types)::text[]) = 0 OR o.type = ANY (sqlc.arg(types)::text[]))
 ORDER BY o.subject, o.txid, o.seq
 LIMIT sqlc.arg(max_rows);

-- name: OutboxOldestPosition :many
-- The oldest retained event's position (no row when the log is empty),
-- the first transaction id not yet assigned, and whether an event sits
-- at the cursor (at_txid, at_seq). Retention deletes a prefix of the log,
-- so a cursor below this position has lost events after it; a cursor at
-- or above next_txid, or one between the oldest event and next_txid where
-- no event sits (every cursor is an event's position, and retention never
-- deletes above the oldest), was never a position of this log: all three
-- are CURSOR_EXPIRED. A hot standby's next_txid lags its primary's, and it
-- may not have the cursor's event yet, so on one (in_recovery) only the
-- first rule holds. :many so an empty log is an empty slice rather than an
-- error.
SELECT o.txid, o.seq, pg_snapshot_xmax(pg_current_snapshot())::xid8 AS next_txid,
       pg_is_in_recovery() AS in_recovery,
       EXISTS (SELECT 1 FROM outbox x
                WHERE x.txid = sqlc.arg(at_txid)::xid8 AND x.seq = sqlc.arg(at_seq)::bigint) AS at_event
  FROM outbox o
 ORDER BY o.txid, o.seq
 LIMIT 1;

-- name: OutboxHeadPosition :many
-- The newest visible event's position (no row when nothing is visible):
-- where a freshly started broker begins its live feed. Every row committed
-- later has a txid at or above the snapshot xmin, hence a greater position.
SELECT o.txid, o.seq
  FROM outbox o
 WHERE o.txid < pg_snapshot_xmin(pg_current_snapshot())
 ORDER BY o.txid DESC, o.seq DESC
 LIMIT 1;

-- name: OutboxNewestTxid :one
-- The newest transaction id the database's logs hold (the event log, its
-- sinks' cursors and the revocation feed; 0 when all are empty) and the
-- first one the cluster has not assigned yet. Positions are transaction
-- ids, so the second must be above the first: a database restored into
-- another cluster (pg_dump, then pg_restore) whose counter is behind would
-- number its new events below the restored ones, where no reader looks.
SELECT GREATEST((SELECT max(o.txid) FROM outbox o), (SELECT max(c.txid) FROM outbox_cursors c),
                (SELECT max(a.txid) FROM authz_changes a), '0'::xid8)::xid8 AS newest_txid,
       pg_snapshot_xmax(pg_current_snapshot())::xid8 AS next_txid;

-- name: OutboxNextTxid :one
-- The first transaction id this database has not assigned yet, and whether
-- it is a hot standby (whose next id lags its primary's): a position at or
-- above it was never one of this log's.
SELECT pg_snapshot_xmax(pg_current_snapshot())::xid8 AS next_txid, pg_is_in_recovery() AS in_recovery;

-- name: OutboxOldestTime :many
-- When the oldest retained event happened (no row when the log is empty):
-- a webhook recover since an earlier time cannot re-send what retention
-- pruned before it, and says so (retainedSince).
SELECT o.time FROM outbox o ORDER BY o.txid, o.seq LIMIT 1;
