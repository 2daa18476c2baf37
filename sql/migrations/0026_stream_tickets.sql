-- +goose Up
-- Stream tickets let a browser's EventSource, which cannot send an
-- Authorization header, open GET /v1/events/stream: an authenticated client
-- asks for a ticket (POST /v1/events/stream-tickets) and puts it in the
-- stream's URL (?ticket=). A ticket is
--   * single use: redeeming it deletes its row, in one statement, so two
--     concurrent redemptions cannot both succeed;
--   * short-lived: expires_at is compute_now() plus at most 60 s;
--   * bound to the API token that asked for it, and to that token's tenant,
--     identity and role, so the stream it opens has exactly the scope the
--     token's own stream would have; a revoked token's tickets redeem
--     nothing.
-- Only the SHA-256 of the ticket is stored, like API tokens. The table is in
-- the database, not in a process's memory, so any API process can redeem a
-- ticket another one issued. Expired rows are deleted by later issuances.
CREATE TABLE stream_tickets (
  ticket_hash bytea PRIMARY KEY,
  token_id    text NOT NULL REFERENCES api_tokens,
  tenant_id   text NOT NULL REFERENCES tenants,
  identity    text NOT NULL CHECK (identity <> ''),
  role        text NOT NULL CHECK (role IN ('operator', 'member', 'viewer')),
  created_at  timestamptz NOT NULL DEFAULT compute_now(),
  expires_at  timestamptz NOT NULL,
  CHECK (expires_at > created_at AND expires_at <= created_at + interval '60 seconds')
);
CREATE INDEX stream_tickets_expiry ON stream_tickets (expires_at);

-- +goose Down
DROP TABLE stream_tickets;
