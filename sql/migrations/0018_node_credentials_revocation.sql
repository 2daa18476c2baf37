-- +goose Up
-- Revocable node credentials and single-use join tokens.
--
-- A credential is revoked outright (an operator's DELETE, or retire) or
-- superseded by a re-join of its node: then it keeps authenticating until
-- grace_until, so a daemon that re-joins does not lock out one still
-- running, but a stolen credential dies with the grace. The database is the
-- authority: a credential authenticates while
--   revoked_at IS NULL OR grace_until > compute_now().
ALTER TABLE node_credentials
  ADD COLUMN grace_until timestamptz,
  ADD CONSTRAINT node_credentials_grace_revoked CHECK (grace_until IS NULL OR revoked_at IS NOT NULL);

-- The credential a node's current session was opened with, at that epoch.
-- Revoking the credential closes the session in the revoking transaction
-- (the epoch moves on, so every write still carrying the old one changes
-- nothing, and the gateway drops the connection at its next flush).
CREATE TABLE node_session_credentials (
  node_id       text PRIMARY KEY REFERENCES nodes,
  session_epoch bigint NOT NULL CHECK (session_epoch > 0),
  credential_id text NOT NULL REFERENCES node_credentials
);
CREATE INDEX node_session_credentials_credential ON node_session_credentials (credential_id);

ALTER TABLE node_sessions DROP CONSTRAINT node_sessions_close_reason_check;
ALTER TABLE node_sessions ADD CONSTRAINT node_sessions_close_reason_check
  CHECK (close_reason IN ('closed', 'gateway-lost', 'retired', 'revoked'));

-- Single-use join tokens (bcj_…), stored as SHA-256 hashes: an operator
-- issues one for one node id, and the daemon joins with it instead of an
-- operator token. It is consumed in the join's transaction; node_id has no
-- foreign key because joining registers a node that is new. tenant_id and
-- identity are the operator who issued it.
CREATE TABLE node_join_tokens (
  id            text PRIMARY KEY,
  node_id       text NOT NULL,
  token_hash    bytea NOT NULL UNIQUE,
  tenant_id     text NOT NULL,
  identity      text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT compute_now(),
  expires_at    timestamptz NOT NULL,
  used_at       timestamptz,
  -- The credential the join issued.
  credential_id text REFERENCES node_credentials,
  CHECK (expires_at > created_at),
  CHECK ((used_at IS NULL) = (credential_id IS NULL))
);
CREATE INDEX node_join_tokens_node ON node_join_tokens (node_id, created_at);

-- +goose Down
DROP TABLE node_join_tokens;
ALTER TABLE node_sessions DROP CONSTRAINT node_sessions_close_reason_check;
UPDATE node_sessions SET close_reason = 'closed' WHERE close_reason = 'revoked';
ALTER TABLE node_sessions ADD CONSTRAINT node_sessions_close_reason_check
  CHECK (close_reason IN ('closed', 'gateway-lost', 'retired'));
DROP TABLE node_session_credentials;
ALTER TABLE node_credentials DROP CONSTRAINT node_credentials_grace_revoked, DROP COLUMN grace_until;
