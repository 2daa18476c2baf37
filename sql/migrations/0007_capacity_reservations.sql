-- +goose Up
-- Quota per tenant and resource ('gpu', 'gpu:<model>', 'vcpu', 'memory',
-- 'disk'). Charged with UPDATE ... SET used = used + n WHERE used + n <= max;
-- zero rows is QUOTA_EXCEEDED. quotas.set refuses a max below used (CONFLICT)
-- rather than breaking the CHECK: a tenant is shrunk by releasing first.
-- version counts quotas.set changes only, not charges.
CREATE TABLE quota_usage (
  tenant_id text NOT NULL REFERENCES tenants,
  resource  text NOT NULL CHECK (resource ~ '^(gpu|gpu:[A-Za-z0-9._-]+|vcpu|memory|disk)$'),
  used      bigint NOT NULL DEFAULT 0,
  max       bigint NOT NULL CHECK (max >= 0),
  version   bigint NOT NULL DEFAULT 1 CHECK (version > 0),
  PRIMARY KEY (tenant_id, resource),
  CONSTRAINT quota_usage_within_max CHECK (used >= 0 AND used <= max)
);

-- A reservation holds its quota charges (charges, resource -> amount) in
-- every non-terminal state, pending included; release refunds exactly them.
CREATE TABLE reservations (
  id         text PRIMARY KEY,
  tenant_id  text NOT NULL REFERENCES tenants,
  created_by text NOT NULL,
  state      text NOT NULL
             CHECK (state IN ('pending', 'booked', 'active', 'released', 'expired', 'cancelled', 'failed')),
  pool_id    text REFERENCES pools,
  site_id    text REFERENCES sites,
  spec       jsonb NOT NULL,
  during     tstzrange NOT NULL CHECK (NOT isempty(during) AND NOT lower_inf(during) AND NOT upper_inf(during)),
  charges    jsonb NOT NULL DEFAULT '{}',
  conditions jsonb NOT NULL DEFAULT '[]',
  version    bigint NOT NULL DEFAULT 1 CHECK (version > 0),
  created_at timestamptz NOT NULL DEFAULT compute_now(),
  updated_at timestamptz NOT NULL DEFAULT compute_now(),
  CHECK ((pool_id IS NULL) <> (site_id IS NULL))
);
CREATE INDEX reservations_tenant ON reservations (tenant_id, id);

-- One allocation per placed reservation: the node, the atoms and the scalars
-- it holds. Live while released_at is NULL; node_resources.allocated equals
-- the sum over live allocations. The reservation reference is deferred: a
-- new reservation is placed first and inserted once its state is known, so
-- that it is born at version 1 in its final state with one event.
CREATE TABLE allocations (
  id             text PRIMARY KEY,
  reservation_id text NOT NULL REFERENCES reservations DEFERRABLE INITIALLY DEFERRED,
  node_id        text NOT NULL REFERENCES nodes,
  device_ids     text[] NOT NULL,
  vcpu           bigint NOT NULL CHECK (vcpu >= 0),
  memory         bigint NOT NULL CHECK (memory >= 0),
  disk           bigint NOT NULL CHECK (disk >= 0),
  released_at    timestamptz,
  created_at     timestamptz NOT NULL DEFAULT compute_now()
);
CREATE INDEX allocations_reservation ON allocations (reservation_id);
CREATE INDEX allocations_live_node ON allocations (node_id) WHERE released_at IS NULL;

-- Rule 1, device-time exclusivity: one live booking per atom per instant,
-- whatever the scheduler, the API or a buggy module does. Bookings are
-- inserted with ON CONFLICT DO NOTHING, which honours the constraint and
-- inserts zero rows on overlap; extensions insert the added segment.
-- id and created_seq are additions to the spec's columns. created_seq is
-- drawn from the outbox's sequence when the booking is written, which is
-- after the placer locked the node and GPU rows: of a booking and a cordon
-- that conflict on a row, the one that waited draws the later number. So the
-- invariant checker can prove, in outbox order, that no booking was made on
-- a node after a committed cordon of it. (txid order would not do: a
-- transaction may take its xid before it waits for the lock.)
CREATE TABLE device_bookings (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  device_id     text NOT NULL REFERENCES devices,
  allocation_id text NOT NULL,
  during        tstzrange NOT NULL CHECK (NOT isempty(during)),
  created_seq   bigint NOT NULL DEFAULT nextval('outbox_seq_seq'),
  CONSTRAINT device_bookings_no_overlap EXCLUDE USING gist (device_id WITH =, during WITH &&)
);
CREATE INDEX device_bookings_allocation ON device_bookings (allocation_id);

-- Idempotency keys are scoped to (tenant, identity, key): another identity
-- cannot squat a key. request_hash detects the same key with another body;
-- response is NULL while the first request is in flight (its transaction
-- holds the row) and then holds what is replayed, errors included.
CREATE TABLE idempotency_keys (
  tenant_id    text NOT NULL,
  identity     text NOT NULL,
  key          text NOT NULL CHECK (key <> '' AND length(key) <= 255),
  request_hash bytea NOT NULL,
  response     jsonb,
  created_at   timestamptz NOT NULL DEFAULT compute_now(),
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, identity, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE device_bookings;
DROP TABLE allocations;
DROP TABLE reservations;
DROP TABLE quota_usage;
