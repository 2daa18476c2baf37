-- +goose Up
-- Which API token issued each node join token, so that revoking that token
-- (with its descendants) also revokes its join tokens not used yet: a
-- leaked operator token's join tokens would otherwise join machines for up
-- to a day after its revocation. NULL: issued by the system (the demo, the
-- tests), and every join token issued before this migration. Used join
-- tokens are left as they are: the node credentials they issued are the
-- operators' to revoke, node by node.
ALTER TABLE node_join_tokens ADD COLUMN issued_by text REFERENCES api_tokens (id);
-- The revoke looks up the unused join tokens of the tokens it revokes.
CREATE INDEX node_join_tokens_issued_by ON node_join_tokens (issued_by)
 WHERE issued_by IS NOT NULL AND used_at IS NULL AND revoked_at IS NULL;

-- +goose Down
DROP INDEX node_join_tokens_issued_by;
ALTER TABLE node_join_tokens DROP COLUMN issued_by;
