-- name: ReservationResyncMissing :many
-- The reconciler rows live reservations need and no longer have (lost to a
-- bug, a restore, a hand-edited queue): a pending reservation before its
-- end needs its placement retry, a booked one its activation, and every
-- one holding quota its expiry. due_in_seconds is when each should run: at
-- the start for an activation, at the end for an expiry, now for a retry.
-- Ordered and bounded so a large backlog is put back in batches.
SELECT m.id, m.kind, m.due_in_seconds FROM (
  SELECT r.id, sqlc.arg(place_kind)::text AS kind, 0::float8 AS due_in_seconds
    FROM reservations r
   WHERE r.state = 'pending' AND upper(r.during) > compute_now()
     AND NOT EXISTS (SELECT 1 FROM work_queue w WHERE w.kind = sqlc.arg(place_kind)::text AND w.key = r.id)
  UNION ALL
  SELECT r.id, sqlc.arg(activate_kind)::text,
         greatest(extract(epoch FROM lower(r.during) - compute_now()), 0)::float8
    FROM reservations r
   WHERE r.state = 'booked'
     AND NOT EXISTS (SELECT 1 FROM work_queue w WHERE w.kind = sqlc.arg(activate_kind)::text AND w.key = r.id)
  UNION ALL
  SELECT r.id, sqlc.arg(expire_kind)::text,
         greatest(extract(epoch FROM upper(r.during) - compute_now()), 0)::float8
    FROM reservations r
   WHERE r.state IN ('pending', 'booked', 'active')
     AND NOT EXISTS (SELECT 1 FROM work_queue w WHERE w.kind = sqlc.arg(expire_kind)::text AND w.key = r.id)
) m
 ORDER BY m.id, m.kind
 LIMIT sqlc.arg(max_rows);
