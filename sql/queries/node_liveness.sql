-- name: NodeLivenessLock :one
-- The node row FOR NO KEY UPDATE with what liveness needs from its pool.
-- Marking a node unreachable updates this row, which the placer holds FOR
-- SHARE, so whichever commits second sees the first (rule 4). Not FOR
-- UPDATE, which would block the foreign-key checks (FOR KEY SHARE) of node
-- commands queued meanwhile (see NodeGetForUpdate).
SELECT n.id, n.pool_id, n.state, n.no_schedule_reasons, n.conditions, n.version,
       p.kind AS pool_kind, p.lost_after_seconds
  FROM nodes n JOIN pools p ON p.id = n.pool_id
 WHERE n.id = sqlc.arg(id)
   FOR NO KEY UPDATE OF n;

-- name: NodeLivenessUpdate :execrows
-- A liveness transition: a versioned update of the node row.
UPDATE nodes SET state = sqlc.arg(state), no_schedule_reasons = sqlc.arg(no_schedule_reasons)::text[],
       conditions = sqlc.arg(conditions), version = version + 1
 WHERE id = sqlc.arg(id) AND version = sqlc.arg(version);

-- name: NodeLivenessDue :many
-- Nodes whose next liveness transition is due now: no session for 40 s
-- plus grace, or unreachable for longer than their pool's lost_after
-- (provider and vps-host pools only; bare metal is never lost) of the
-- control plane's uptime: the absence counts from the later of
-- unreachable_since and the end of the last control-plane outage, as in
-- NodeLivenessLostDue, which the reconciler asks again under the node's lock
-- (node_absence_counted_from, migration 0074).
SELECT n.id FROM nodes n
  JOIN node_sessions s ON s.node_id = n.id
  JOIN pools p ON p.id = n.pool_id
  CROSS JOIN LATERAL node_absence_counted_from(s.unreachable_since) a
 WHERE (n.state IN ('registered', 'disconnected') AND NOT s.connected
        AND s.disconnected_since + make_interval(secs => sqlc.arg(no_session_seconds)::float8
              + CASE s.grace_reason WHEN 'gateway-lost' THEN sqlc.arg(gateway_grace_seconds)::float8
                                    WHEN 'outage' THEN sqlc.arg(outage_grace_seconds)::float8 ELSE 0 END)
            <= compute_now())
    OR (n.state = 'unreachable' AND p.kind IN ('provider', 'vps-host') AND p.lost_after_seconds IS NOT NULL
        AND s.unreachable_since IS NOT NULL
        AND a.counted_from + make_interval(secs => p.lost_after_seconds) <= compute_now())
 ORDER BY n.id;

-- name: NodeLivenessLostDue :one
-- Whether unreachable node has been away lost_seconds, judged by the
-- database's clock: counted from the later of unreachable_since and the end
-- of the last control-plane outage (node_liveness_sweeps.outage_ended_at),
-- since a daemon cannot reconnect while the control plane is down; and how
-- many seconds are left until then (zero or less once due), for the
-- reconciler's next run (node_absence_counted_from, migration 0074). No
-- row: the node has no unreachable_since.
SELECT s.unreachable_since::timestamptz AS unreachable_since,
       a.counted_from::timestamptz AS counted_from,
       (a.counted_from + make_interval(secs => sqlc.arg(lost_seconds)::float8) <= compute_now())::bool AS due,
       extract(epoch FROM a.counted_from
          + make_interval(secs => sqlc.arg(lost_seconds)::float8) - compute_now())::float8 AS remaining_seconds
  FROM node_sessions s
  CROSS JOIN LATERAL node_absence_counted_from(s.unreachable_since) a
 WHERE s.node_id = sqlc.arg(node_id) AND s.unreachable_since IS NOT NULL;

-- name: NodeLivenessHeartbeat :one
-- Moves the controller heartbeat to now and returns how many seconds the
-- previous one was ago (-1 on the very first sweep).
WITH prev AS (
  SELECT last_sweep_at FROM node_liveness_sweeps WHERE id = 1 FOR UPDATE
), up AS (
  INSERT INTO node_liveness_sweeps (id, last_sweep_at) VALUES (1, compute_now())
  ON CONFLICT (id) DO UPDATE SET last_sweep_at = EXCLUDED.last_sweep_at
  RETURNING last_sweep_at
)
SELECT coalesce((SELECT extract(epoch FROM (SELECT last_sweep_at FROM up) - prev.last_sweep_at) FROM prev), -1)::float8
       AS gap_seconds;

-- name: NodeLivenessOutageEnded :exec
-- Records that this sweep found the control plane back from an outage, so
-- that node absences are counted from this sweep on (NodeLivenessLostDue,
-- NodeJobTimeoutAbsence).
UPDATE node_liveness_sweeps SET outage_ended_at = compute_now() WHERE id = 1;

-- name: NodeLivenessControllerAge :one
-- Seconds since the last sweep, -1 if there never was one.
SELECT coalesce((SELECT extract(epoch FROM compute_now() - last_sweep_at) FROM node_liveness_sweeps WHERE id = 1), -1)::float8
       AS age_seconds;

-- name: NodeLivenessNow :one
SELECT compute_now()::timestamptz AS now;
