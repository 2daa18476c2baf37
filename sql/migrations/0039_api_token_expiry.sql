-- +goose Up
-- A token may carry an expiry: after it, authentication and stream
-- tickets refuse it as if it were revoked. NULL never expires (every
-- token issued before this migration, the bootstrap and demo tokens).
-- The constraint keeps an expiry after the token's creation, so a token
-- that is dead on arrival cannot be issued.
ALTER TABLE api_tokens ADD COLUMN expires_at timestamptz;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_expires_after_creation
  CHECK (expires_at > created_at);

-- +goose Down
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_expires_after_creation;
ALTER TABLE api_tokens DROP COLUMN expires_at;
