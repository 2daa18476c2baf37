-- name: NodeSessionEnsure :exec
-- Called at join. A node that never opened a session counts its time
-- without one from its newest join, not from the beginning of time.
INSERT INTO node_sessions AS s (node_id, disconnected_since)
VALUES (sqlc.arg(node_id), compute_now())
ON CONFLICT (node_id) DO UPDATE
   SET disconnected_since = CASE WHEN s.session_epoch = 0 THEN compute_now() ELSE s.disconnected_since END;

-- name: NodeSessionGet :one
SELECT node_id, session_epoch, gateway_id, gateway_epoch, journal_id, connected, opened_at, last_seen_at,
       closed_at, close_reason, disconnected_since, grace_reason, unreachable_since, observed_generation,
       inventory_reconciled_epoch
  FROM node_sessions WHERE node_id = sqlc.arg(node_id);

-- name: NodeSessionGetForUpdate :one
-- Taken after the node row (lock order: nodes, then node_sessions).
SELECT node_id, session_epoch, gateway_id, gateway_epoch, journal_id, connected, opened_at, last_seen_at,
       closed_at, close_reason, disconnected_since, grace_reason, unreachable_since, observed_generation,
       inventory_reconciled_epoch
  FROM node_sessions WHERE node_id = sqlc.arg(node_id) FOR UPDATE;

-- name: NodeSessionOpen :one
-- Supersedes whatever session the node had: the epoch grows, so every
-- write still carrying the old epoch affects zero rows. The generation the
-- daemon says it applied is believed up to the node's generation: no
-- daemon can have applied more than was desired of it.
UPDATE node_sessions
   SET session_epoch = session_epoch + 1, gateway_id = sqlc.arg(gateway_id)::text, gateway_epoch = sqlc.arg(gateway_epoch)::bigint,
       journal_id = sqlc.arg(journal_id)::text, connected = true, opened_at = compute_now(), last_seen_at = compute_now(),
       closed_at = NULL, close_reason = NULL, grace_reason = 'none', unreachable_since = NULL,
       observed_generation = GREATEST(0, LEAST(sqlc.arg(observed_generation)::bigint,
         COALESCE((SELECT d.generation FROM node_desired d WHERE d.node_id = sqlc.arg(node_id)), 0)))
 WHERE node_id = sqlc.arg(node_id)
RETURNING session_epoch, opened_at::timestamptz AS opened_at;

-- name: NodeSessionTouch :many
-- A gateway's liveness flush: for each session it holds, how long ago the
-- daemon was last heard from. The database turns ages into times, so a
-- gateway with a wrong clock cannot fake liveness; a negative age (a claim
-- from the future) counts as zero, and last_seen_at never moves back. The
-- epoch and gateway guards make a zombie's flush touch nothing. Rows are
-- taken in node order so that two flushes cannot deadlock.
WITH u AS (
  SELECT unnest(sqlc.arg(node_ids)::text[]) AS node_id, unnest(sqlc.arg(epochs)::bigint[]) AS epoch,
         unnest(sqlc.arg(ages)::float8[]) AS age
), locked AS (
  SELECT s.node_id FROM node_sessions s JOIN u ON u.node_id = s.node_id
   WHERE s.session_epoch = u.epoch AND s.connected AND s.gateway_id = sqlc.arg(gateway_id)::text
   ORDER BY s.node_id FOR UPDATE OF s
)
UPDATE node_sessions s
   SET last_seen_at = greatest(s.last_seen_at, compute_now() - make_interval(secs => greatest(u.age, 0)))
  FROM u, locked
 WHERE s.node_id = u.node_id AND locked.node_id = s.node_id AND s.session_epoch = u.epoch
RETURNING s.node_id;

-- name: NodeSessionClose :execrows
-- The daemon's connection ended closed_ago seconds ago (an age, like every
-- gateway report). Zero rows: the session was already superseded or closed.
UPDATE node_sessions
   SET connected = false, close_reason = 'closed',
       closed_at = compute_now() - make_interval(secs => greatest(sqlc.arg(closed_ago)::float8, 0)),
       disconnected_since = compute_now() - make_interval(secs => greatest(sqlc.arg(closed_ago)::float8, 0)),
       grace_reason = 'none'
 WHERE node_id = sqlc.arg(node_id) AND session_epoch = sqlc.arg(session_epoch) AND connected;

-- name: NodeSessionGatewayLost :execrows
-- The session's gateway lost its lease at lost_at: the session ended then.
UPDATE node_sessions
   SET connected = false, close_reason = 'gateway-lost', closed_at = sqlc.arg(lost_at)::timestamptz,
       disconnected_since = sqlc.arg(lost_at)::timestamptz, grace_reason = sqlc.arg(grace_reason)
 WHERE node_id = sqlc.arg(node_id) AND session_epoch = sqlc.arg(session_epoch) AND connected;

-- name: NodeSessionsOfLostGateways :many
-- Connected sessions whose gateway no longer holds the lease it opened them
-- under: expired, released, or taken over at a new epoch. lost_at is when
-- the lease lapsed (the last sighting, if it was released early), or now
-- when it was taken over (the old expiry is gone).
SELECT s.node_id, s.session_epoch,
       (CASE WHEN l.name IS NULL THEN compute_now()
             WHEN l.epoch <> s.gateway_epoch THEN compute_now()
             ELSE greatest(l.expires_at, s.last_seen_at) END)::timestamptz AS lost_at
  FROM node_sessions s
  LEFT JOIN leases l ON l.name = 'gateway:' || s.gateway_id
 WHERE s.connected
   AND (l.name IS NULL OR l.epoch <> s.gateway_epoch OR l.expires_at <= compute_now())
 ORDER BY s.node_id;

-- name: NodeSessionOutageGrace :execrows
-- After a database or controller outage, every node without a session
-- starts its clock again now, with the outage grace: daemons could not
-- reconnect while the control plane itself was down.
UPDATE node_sessions s SET disconnected_since = compute_now(), grace_reason = 'outage'
  FROM nodes n
 WHERE n.id = s.node_id AND NOT s.connected AND n.state IN ('registered', 'disconnected');

-- name: NodeSessionMarkUnreachable :exec
UPDATE node_sessions SET unreachable_since = compute_now() WHERE node_id = sqlc.arg(node_id);

-- name: NodeSessionRetire :exec
UPDATE node_sessions
   SET connected = false, close_reason = 'retired', closed_at = compute_now()
 WHERE node_id = sqlc.arg(node_id) AND connected;

-- name: NodeSessionLockForDispatch :one
-- Dispatch locks the session row at the epoch it routes to: a session
-- superseded meanwhile returns no row, and a supersede waits until the
-- dispatching transaction ends, so a zombie gateway cannot route.
-- inventory_reconciled says whether the daemon's inventory of this session
-- was reconciled (NodeSessionInventoryReconciled): no assign goes before.
SELECT session_epoch, journal_id::text AS journal_id,
       (inventory_reconciled_epoch IS NOT DISTINCT FROM session_epoch)::boolean AS inventory_reconciled
  FROM node_sessions
 WHERE node_id = sqlc.arg(node_id) AND session_epoch = sqlc.arg(session_epoch) AND connected
   FOR SHARE;

-- name: NodeSessionInventoryReconciled :execrows
-- The daemon's inventory of assignments at session_epoch was reconciled:
-- from now on dispatch may send this session assigns (NodeCommandMarkSent
-- checks it). Zero rows: the session was superseded. Written in the
-- reconcile's transaction, which holds the row at that epoch
-- (NodeSessionLockAtEpoch), with the unassigns the reconcile queued.
UPDATE node_sessions SET inventory_reconciled_epoch = session_epoch
 WHERE node_id = sqlc.arg(node_id) AND session_epoch = sqlc.arg(session_epoch);
