-- name: NodeCredentialCreate :exec
INSERT INTO node_credentials (id, node_id, token_hash)
VALUES (sqlc.arg(id), sqlc.arg(node_id), sqlc.arg(token_hash));

-- name: NodeCredentialAuthenticate :one
-- A live credential and the node it speaks for: not revoked, or superseded
-- by a re-join and still within its grace. Retired nodes have every
-- credential revoked, so they cannot authenticate.
SELECT c.id, c.node_id FROM node_credentials c
 WHERE c.token_hash = sqlc.arg(token_hash)
   AND (c.revoked_at IS NULL OR c.grace_until > compute_now());

-- name: NodeCredentialRefusedNode :one
-- The node of a credential that no longer authenticates, and its state: a
-- daemon of a retired node is told so, and stops asking for a join token
-- its node can never have. No row for a secret that was never issued.
SELECT n.id, n.state FROM node_credentials c JOIN nodes n ON n.id = c.node_id
 WHERE c.token_hash = sqlc.arg(token_hash);

-- name: NodeCredentialRevokeAll :execrows
-- Retire: every credential of the node stops authenticating now, those in
-- their grace included.
UPDATE node_credentials
   SET revoked_at = coalesce(revoked_at, compute_now()),
       grace_until = CASE WHEN grace_until > compute_now() THEN compute_now() ELSE grace_until END
 WHERE node_id = sqlc.arg(node_id) AND (revoked_at IS NULL OR grace_until > compute_now());

-- name: NodeCredentialSupersede :many
-- A re-join: the node's other live credentials are revoked now and keep
-- authenticating until the grace ends. A credential already in its grace
-- keeps its own end.
UPDATE node_credentials
   SET revoked_at = compute_now(),
       grace_until = compute_now() + make_interval(secs => greatest(sqlc.arg(grace_seconds)::float8, 0))
 WHERE node_id = sqlc.arg(node_id) AND id <> sqlc.arg(keep_id)::text AND revoked_at IS NULL
RETURNING id, grace_until::timestamptz AS grace_until;

-- name: NodeCredentialGetForUpdate :one
-- Taken after the node row (lock order: nodes, node_credentials,
-- node_sessions).
SELECT id, node_id, created_at, revoked_at, grace_until,
       (revoked_at IS NULL OR coalesce(grace_until > compute_now(), false))::boolean AS active
  FROM node_credentials
 WHERE id = sqlc.arg(id) AND node_id = sqlc.arg(node_id)
   FOR UPDATE;

-- name: NodeCredentialRevoke :one
-- An operator's revocation: the credential stops authenticating now, even
-- within a grace.
UPDATE node_credentials
   SET revoked_at = coalesce(revoked_at, compute_now()),
       grace_until = CASE WHEN grace_until > compute_now() THEN compute_now() ELSE grace_until END
 WHERE id = sqlc.arg(id) AND node_id = sqlc.arg(node_id)
RETURNING revoked_at::timestamptz AS revoked_at;

-- name: NodeCredentialList :many
-- A node's credentials, never their secrets, oldest first.
SELECT id, created_at, revoked_at, grace_until,
       (revoked_at IS NULL OR coalesce(grace_until > compute_now(), false))::boolean AS active
  FROM node_credentials
 WHERE node_id = sqlc.arg(node_id)
 ORDER BY created_at, revoked_at NULLS LAST, id;

-- name: NodeCredentialActive :one
-- Whether a credential still authenticates for the node, read inside the
-- transaction that opens a session with it (after the node row lock, which
-- every revocation takes too).
SELECT EXISTS (
  SELECT 1 FROM node_credentials
   WHERE id = sqlc.arg(id) AND node_id = sqlc.arg(node_id)
     AND (revoked_at IS NULL OR grace_until > compute_now())
)::boolean AS active;

-- name: NodeCredentialNextGraceEnd :one
-- Seconds until the earliest grace of the node's credentials ends; 0 when
-- none is running.
SELECT coalesce(extract(epoch FROM min(grace_until) - compute_now()), 0)::float8 AS seconds
  FROM node_credentials
 WHERE node_id = sqlc.arg(node_id) AND grace_until > compute_now();

-- name: NodeSessionCredentialSet :exec
-- The credential the node's session at session_epoch was opened with.
INSERT INTO node_session_credentials (node_id, session_epoch, credential_id)
VALUES (sqlc.arg(node_id), sqlc.arg(session_epoch), sqlc.arg(credential_id))
ON CONFLICT (node_id) DO UPDATE
   SET session_epoch = EXCLUDED.session_epoch, credential_id = EXCLUDED.credential_id;

-- name: NodeSessionCloseRevoked :one
-- Closes the node's connected session if the credential it was opened with
-- no longer authenticates (revoked, or its grace over). The epoch moves on,
-- so the gateway's liveness flush and every write at the old epoch touch
-- nothing, and dispatch cannot route to it. A session whose credential is
-- not recorded (opened before credentials were recorded) is closed as
-- well: a daemon holding a live credential simply reconnects. Returns the
-- closed session's epoch; no row when there was nothing to close.
UPDATE node_sessions s
   SET session_epoch = s.session_epoch + 1, connected = false, close_reason = 'revoked',
       closed_at = compute_now(), disconnected_since = compute_now(), grace_reason = 'none'
 WHERE s.node_id = sqlc.arg(node_id) AND s.connected
   AND NOT EXISTS (
     SELECT 1 FROM node_session_credentials sc JOIN node_credentials c ON c.id = sc.credential_id
      WHERE sc.node_id = s.node_id AND sc.session_epoch = s.session_epoch
        AND (c.revoked_at IS NULL OR c.grace_until > compute_now()))
RETURNING (s.session_epoch - 1)::bigint AS closed_epoch;
