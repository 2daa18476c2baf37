-- +goose Up
-- Commands to node daemons (commands.run): an exec, a wipe, a deploy sent
-- through the gateway holding the node's session. Every hop may deliver
-- twice, so every receiver can tell a duplicate from new work:
--
-- * UNIQUE (node_id, idempotency_key): a workflow step (wf:<workflowId>:<stepId>)
--   or a retried request creates the command once.
-- * min_generation: dispatch waits until the daemon reports (in its hello)
--   that it applied at least this node spec generation.
-- * dispatched_epoch: the session epoch the command was last sent at; the
--   dispatching transaction holds the session row FOR SHARE, so a zombie
--   gateway (an older epoch) can never mark it sent.
-- * journal_id: the daemon journal it was last sent to. A daemon that comes
--   back with another journal lost its memory: in-flight commands that are
--   not retry_safe fail, retry-safe ones are sent again.
CREATE TABLE node_commands (
  id               text PRIMARY KEY,
  tenant_id        text NOT NULL,
  identity         text NOT NULL,
  node_id          text NOT NULL REFERENCES nodes,
  allocation_id    text REFERENCES allocations,
  idempotency_key  text NOT NULL CHECK (idempotency_key <> ''),
  -- instance-start and instance-stop carry out instances (0016); they are
  -- written by instances.create and instances.delete, never by commands.run.
  kind             text NOT NULL CHECK (kind IN ('exec', 'wipe', 'deploy', 'instance-start', 'instance-stop')),
  retry_safe       boolean NOT NULL,
  payload          jsonb NOT NULL DEFAULT '{}',
  min_generation   bigint NOT NULL DEFAULT 0 CHECK (min_generation >= 0),
  state            text NOT NULL CHECK (state IN ('queued', 'sent', 'running', 'succeeded', 'failed', 'cancelled', 'timed-out')),
  exit_code        integer,
  output           text NOT NULL DEFAULT '',
  reason           text NOT NULL DEFAULT '',
  version          bigint NOT NULL DEFAULT 1 CHECK (version >= 1),
  dispatched_epoch bigint,
  journal_id       text,
  created_at       timestamptz NOT NULL DEFAULT compute_now(),
  dispatched_at    timestamptz,
  finished_at      timestamptz,
  UNIQUE (node_id, idempotency_key)
);
-- Dispatch reads a node's commands that are queued or in flight.
CREATE INDEX node_commands_open ON node_commands (node_id, created_at)
  WHERE state IN ('queued', 'sent', 'running');

-- +goose Down
DROP TABLE node_commands;
