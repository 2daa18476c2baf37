-- +goose Up
-- Join tokens are revocable: an operator who issued one for a machine that
-- never came (or whose token leaked) takes it back before it is used.
-- Revoking, like issuing and using one, appends to authz_changes in the
-- same transaction, the feed every token change goes through. A revoked or
-- used token joins nothing (NodeJoinTokenCheck, NodeJoinTokenConsume).
ALTER TABLE node_join_tokens
  ADD COLUMN revoked_at timestamptz,
  ADD CONSTRAINT node_join_tokens_revoked_unused CHECK (revoked_at IS NULL OR used_at IS NULL);

-- +goose Down
ALTER TABLE node_join_tokens DROP CONSTRAINT node_join_tokens_revoked_unused, DROP COLUMN revoked_at;
