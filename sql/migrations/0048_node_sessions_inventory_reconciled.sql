-- +goose Up
-- The session epoch whose daemon's inventory of assignments was reconciled
-- (ReconcileNodeAssignments, in its transaction at that epoch). Dispatch
-- sends no assign on a session before it: the daemon may hold allocations
-- the control plane does not know (a database restored to an earlier
-- point), and only the reconcile finds them and queues their unassigns,
-- which then hold the node's assigns back. An epoch rather than a flag, so
-- that a new session starts unreconciled without anything resetting it: a
-- superseded session's reconcile never counts for its successor, whoever
-- opened it (a release from before this migration included).
ALTER TABLE node_sessions ADD COLUMN inventory_reconciled_epoch bigint
  CHECK (inventory_reconciled_epoch > 0 AND inventory_reconciled_epoch <= session_epoch);

-- Sessions connected now were opened, and their inventories reconciled, by
-- a release that sent assigns without waiting: counted as reconciled, so
-- that an upgrade holds back no node's assigns until its daemon
-- reconnects.
UPDATE node_sessions SET inventory_reconciled_epoch = session_epoch WHERE connected;

-- +goose Down
ALTER TABLE node_sessions DROP COLUMN inventory_reconciled_epoch;
