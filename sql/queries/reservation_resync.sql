-- name: ReservationResyncMissing :many
-- The reconciler rows live reservations need and no longer have (lost to a
-- bug, a restore, a hand-edited queue): the pending reservations of a scope
-- before their end need their scope's queue (key pool:<id> or site:<id>,
-- as commands.PendingQueueKey spells it), a booked one its activation, and
-- a pending or active one its expiry (a booked one's is queued by its
-- activation). key is the work item's key (the
-- reservation id but for the queue); due_in_seconds is when each should
-- run: at the start for an activation, at the end for an expiry, now for a
-- queue. Ordered and bounded so a large backlog is put back in batches.
SELECT m.key, m.kind, m.due_in_seconds FROM (
  SELECT DISTINCT s.key::text AS key, sqlc.arg(queue_kind)::text AS kind, 0::float8 AS due_in_seconds
    FROM reservations r
   CROSS JOIN LATERAL (SELECT CASE WHEN r.pool_id IS NOT NULL THEN 'pool:' || r.pool_id ELSE 'site:' || r.site_id END AS key) s
   WHERE r.state = 'pending' AND upper(r.during) > compute_now()
     AND NOT EXISTS (SELECT 1 FROM work_queue w WHERE w.kind = sqlc.arg(queue_kind)::text AND w.key = s.key)
  UNION ALL
  SELECT r.id AS key, sqlc.arg(activate_kind)::text,
         greatest(extract(epoch FROM lower(r.during) - compute_now()), 0)::float8
    FROM reservations r
   WHERE r.state = 'booked'
     AND NOT EXISTS (SELECT 1 FROM work_queue w WHERE w.kind = sqlc.arg(activate_kind)::text AND w.key = r.id)
  UNION ALL
  SELECT r.id, sqlc.arg(expire_kind)::text,
         greatest(extract(epoch FROM upper(r.during) - compute_now()), 0)::float8
    FROM reservations r
   WHERE r.state IN ('pending', 'active')
     AND NOT EXISTS (SELECT 1 FROM work_queue w WHERE w.kind = sqlc.arg(expire_kind)::text AND w.key = r.id)
) m
 ORDER BY m.key, m.kind
 LIMIT sqlc.arg(max_rows);
