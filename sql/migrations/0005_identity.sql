-- +goose Up
CREATE TABLE tenants (
  id         text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  created_at timestamptz NOT NULL DEFAULT compute_now()
);

-- API tokens are stored as SHA-256 hashes; the secret is shown once.
CREATE TABLE api_tokens (
  id         text PRIMARY KEY,
  token_hash bytea NOT NULL UNIQUE,
  tenant_id  text NOT NULL REFERENCES tenants,
  identity   text NOT NULL CHECK (identity <> ''),
  role       text NOT NULL CHECK (role IN ('operator', 'member', 'viewer')),
  created_at timestamptz NOT NULL DEFAULT compute_now(),
  revoked_at timestamptz
);
CREATE INDEX api_tokens_tenant ON api_tokens (tenant_id, id);

-- authz_changes is the feed that invalidates authentication caches: every
-- token change appends a row here in the same transaction, and API processes
-- tail it with the outbox's snapshot-xmin cursor shape.
CREATE TABLE authz_changes (
  txid     xid8 NOT NULL DEFAULT pg_current_xact_id(),
  seq      bigserial NOT NULL,
  token_id text NOT NULL,
  change   text NOT NULL CHECK (change IN ('created', 'revoked')),
  time     timestamptz NOT NULL DEFAULT compute_now(),
  PRIMARY KEY (txid, seq)
);

-- +goose Down
DROP TABLE authz_changes;
DROP TABLE api_tokens;
DROP TABLE tenants;
