-- +goose Up
-- Webhook endpoints belong to a tenant. The signing secret is kept in clear
-- because every delivery signs with it; previous_secret keeps signing beside
-- the new one until previous_secret_until, so consumers can rotate without a
-- gap. failing_since is when the current run of failures began (NULL while
-- healthy): an endpoint failing continuously for days is disabled.
CREATE TABLE webhook_endpoints (
  id                    text PRIMARY KEY,
  tenant_id             text NOT NULL REFERENCES tenants,
  url                   text NOT NULL CHECK (url ~ '^https?://'),
  event_types           text[] NOT NULL DEFAULT '{}',
  description           text NOT NULL DEFAULT '',
  secret                text NOT NULL CHECK (secret LIKE 'whsec\_%'),
  previous_secret       text,
  previous_secret_until timestamptz,
  enabled               boolean NOT NULL DEFAULT true,
  disabled_reason       text,
  failing_since         timestamptz,
  version               bigint NOT NULL DEFAULT 1,
  created_at            timestamptz NOT NULL DEFAULT compute_now(),
  updated_at            timestamptz NOT NULL DEFAULT compute_now(),
  CHECK (enabled OR disabled_reason IS NOT NULL)
);
-- The scheduler looks up the enabled endpoints of an event's tenant.
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, id);

-- One row per endpoint and event: the unit of retry. UNIQUE(endpoint_id,
-- event_id) makes scheduling idempotent, so the scheduler sink and a
-- recover can both insert with ON CONFLICT DO NOTHING. event_id is not a
-- foreign key: the outbox is append-only and may be pruned by retention.
CREATE TABLE webhook_deliveries (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  endpoint_id     text NOT NULL REFERENCES webhook_endpoints ON DELETE CASCADE,
  event_id        uuid NOT NULL,
  state           text NOT NULL DEFAULT 'pending'
                  CHECK (state IN ('pending', 'succeeded', 'failed', 'abandoned')),
  attempts        int NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at timestamptz NOT NULL DEFAULT compute_now(),
  last_status     int,
  last_error      text,
  created_at      timestamptz NOT NULL DEFAULT compute_now(),
  updated_at      timestamptz NOT NULL DEFAULT compute_now(),
  UNIQUE (endpoint_id, event_id)
);

-- Every HTTP attempt, for GET /v1/webhook-endpoints/{id}/attempts.
-- status is NULL when no response came (timeout, refused connection).
CREATE TABLE webhook_attempts (
  id               bigserial PRIMARY KEY,
  delivery_id      uuid NOT NULL REFERENCES webhook_deliveries ON DELETE CASCADE,
  endpoint_id      text NOT NULL REFERENCES webhook_endpoints ON DELETE CASCADE,
  event_id         uuid NOT NULL,
  attempt          int NOT NULL CHECK (attempt >= 1),
  status           int,
  latency_ms       int NOT NULL CHECK (latency_ms >= 0),
  response_snippet text NOT NULL DEFAULT '' CHECK (octet_length(response_snippet) <= 1024),
  error            text,
  at               timestamptz NOT NULL DEFAULT compute_now()
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, id DESC);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
