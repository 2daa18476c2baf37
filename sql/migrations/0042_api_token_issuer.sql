-- +goose Up
-- Who issued each API token, so that revoking a token revokes every token
-- it issued, their tokens included (Vault's token hierarchy): otherwise a
-- leaked token mints a second one and revoking the first achieves nothing.
-- NULL: issued by the system itself with no issuing token (the bootstrap
-- token of a first start, `compute tokens create --database`, the demo's
-- tokens), and every token issued before this migration, whose issuer was
-- never recorded. A token's issuer is set at insert and never changes, and
-- tokens are never deleted, so the recorded issuers form a forest.
ALTER TABLE api_tokens ADD COLUMN issued_by text REFERENCES api_tokens (id);
-- The revoke walks from a token to the tokens it issued.
CREATE INDEX api_tokens_issued_by ON api_tokens (issued_by) WHERE issued_by IS NOT NULL;

-- +goose Down
DROP INDEX api_tokens_issued_by;
ALTER TABLE api_tokens DROP COLUMN issued_by;
