-- +goose Up
-- Nodes, their daemons and gateways: credentials, sessions and liveness.
-- "Disconnected is not dead": these tables change a node's condition,
-- never what it owns. Nothing here releases a booking.

-- Per-node bearer tokens, issued at join and stored as SHA-256 hashes (the
-- secret is shown once, to the daemon). A token names exactly one node: a
-- daemon can only ever speak for the node it joined as.
CREATE TABLE node_credentials (
  id         text PRIMARY KEY,
  node_id    text NOT NULL REFERENCES nodes,
  token_hash bytea NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT compute_now(),
  revoked_at timestamptz
);
CREATE INDEX node_credentials_node ON node_credentials (node_id, created_at);

-- One row per joined node: its current (or last) session. session_epoch
-- grows by one at every open, so a daemon that reconnects supersedes its old
-- session; routing and liveness writes carry AND session_epoch = $epoch, so
-- a zombie gateway still holding the old session changes nothing.
--
-- Times written by gateways are ages turned into times by the database
-- (compute_now() - age): a gateway's own clock never reaches this table.
--
-- disconnected_since starts the "40 s without a session" clock: the join
-- for a node that never opened a session, the close, or the moment the
-- gateway's lease lapsed. grace_reason adds 0 s, 120 s (gateway-lost) or
-- 5 min (outage) to it.
CREATE TABLE node_sessions (
  node_id             text PRIMARY KEY REFERENCES nodes,
  session_epoch       bigint NOT NULL DEFAULT 0 CHECK (session_epoch >= 0),
  gateway_id          text,
  -- The gateway's lease epoch when it opened the session: a gateway
  -- restarted under the same id (a new lease epoch) does not inherit it.
  gateway_epoch       bigint,
  journal_id          text,
  connected           boolean NOT NULL DEFAULT false,
  opened_at           timestamptz,
  last_seen_at        timestamptz,
  closed_at           timestamptz,
  close_reason        text CHECK (close_reason IN ('closed', 'gateway-lost', 'retired')),
  disconnected_since  timestamptz NOT NULL,
  grace_reason        text NOT NULL DEFAULT 'none' CHECK (grace_reason IN ('none', 'gateway-lost', 'outage')),
  unreachable_since   timestamptz,
  -- The node spec generation the daemon reports as applied.
  observed_generation bigint NOT NULL DEFAULT 0 CHECK (observed_generation >= 0),
  CHECK (NOT connected OR (gateway_id IS NOT NULL AND gateway_epoch IS NOT NULL AND session_epoch > 0))
);
CREATE INDEX node_sessions_connected_gateway ON node_sessions (gateway_id) WHERE connected;

-- Conditions raised on a node by the system (NodeUnreachable), as the
-- reservations table keeps them: [{type, status, reason, message, since}].
ALTER TABLE nodes ADD COLUMN conditions jsonb NOT NULL DEFAULT '[]';

-- The liveness controller's heartbeat, one row. Each sweep moves it to
-- compute_now(); a sweep that finds it older than the outage threshold
-- knows the database or every controller was down, and gives disconnected
-- nodes the outage grace instead of declaring the fleet unreachable.
CREATE TABLE node_liveness_sweeps (
  id            int PRIMARY KEY CHECK (id = 1),
  last_sweep_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE node_liveness_sweeps;
ALTER TABLE nodes DROP COLUMN conditions;
DROP TABLE node_sessions;
DROP TABLE node_credentials;
