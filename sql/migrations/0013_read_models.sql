-- +goose Up
-- Read models: tables written only by projections (projections/), read only
-- by queries (queries/). Each is a function of the event log alone, so any of
-- them can be dropped and rebuilt by replaying the outbox from the start.
-- Every row carries the version of the aggregate event that last wrote it;
-- a projection applies an event only when its version is newer, so applying a
-- batch twice (a replay, a rebuild race) changes nothing. Positions
-- (txid, seq) say where in the log a row was last written.
-- No foreign keys: a projection must be able to apply events in log order
-- without caring which aggregate's events it sees first.

-- Reservations per tenant: the "reservations" projection.
CREATE TABLE rm_reservations (
  id           text PRIMARY KEY,
  tenant_id    text NOT NULL,
  state        text NOT NULL,
  pool_id      text,
  site_id      text,
  -- Where it was placed; kept after the reservation ends, for history.
  node_id      text,
  device_ids   text[] NOT NULL DEFAULT '{}',
  start_ts     timestamptz NOT NULL,
  end_ts       timestamptz NOT NULL,
  tolerations  text[] NOT NULL DEFAULT '{}',
  conditions   jsonb NOT NULL DEFAULT '[]',
  version      bigint NOT NULL CHECK (version > 0),
  -- The position of the event that created it orders lists: unique, stable,
  -- and a new reservation always sorts after every existing one.
  created_txid xid8 NOT NULL,
  created_seq  bigint NOT NULL,
  updated_txid xid8 NOT NULL,
  updated_seq  bigint NOT NULL,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL
);
CREATE UNIQUE INDEX rm_reservations_created ON rm_reservations (created_txid, created_seq);
CREATE INDEX rm_reservations_tenant ON rm_reservations (tenant_id, created_txid, created_seq);

-- The fleet: the "fleet" projection writes the four rm_fleet_* tables.
-- Pools carry the overcommit ratios that turn a node's allocatable scalars
-- into capacity (floor(allocatable * ratio)).
CREATE TABLE rm_fleet_pools (
  id           text PRIMARY KEY,
  site_id      text NOT NULL,
  kind         text NOT NULL,
  cpu_ratio    numeric NOT NULL,
  memory_ratio numeric NOT NULL,
  disk_ratio   numeric NOT NULL,
  version      bigint NOT NULL CHECK (version > 0)
);

CREATE TABLE rm_fleet_nodes (
  id            text PRIMARY KEY,
  pool_id       text NOT NULL,
  cordoned      boolean NOT NULL,
  taints        text[] NOT NULL DEFAULT '{}',
  vcpu          bigint NOT NULL,
  memory_mb     bigint NOT NULL,
  disk_gb       bigint NOT NULL,
  version       bigint NOT NULL CHECK (version > 0),
  registered_at timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  updated_txid  xid8 NOT NULL,
  updated_seq   bigint NOT NULL
);
CREATE INDEX rm_fleet_nodes_pool ON rm_fleet_nodes (pool_id, id);

-- GPUs (kind 'gpu', version = the GPU's version) and their atoms (kind
-- 'mig' or 'slot', parent_id set). Health and quarantine are properties of
-- the GPU; an atom inherits them. Atoms of an earlier layout are retired,
-- as in the write model, because past holders refer to them.
CREATE TABLE rm_fleet_devices (
  id          text PRIMARY KEY,
  node_id     text NOT NULL,
  pool_id     text NOT NULL,
  parent_id   text,
  kind        text NOT NULL,
  model       text NOT NULL,
  mode        text,
  profile     text,
  retired     boolean NOT NULL DEFAULT false,
  health      text NOT NULL DEFAULT 'healthy',
  quarantined boolean NOT NULL DEFAULT false,
  version     bigint NOT NULL
);
CREATE INDEX rm_fleet_devices_node ON rm_fleet_devices (node_id, id);
CREATE INDEX rm_fleet_devices_parent ON rm_fleet_devices (parent_id, id);

-- What each placed reservation holds: its node, atoms and scalars. live is
-- true while booked or active; a node's utilization is the sum over its live
-- allocations (the read-side twin of node_resources.allocated).
CREATE TABLE rm_fleet_allocations (
  reservation_id text PRIMARY KEY,
  tenant_id      text NOT NULL,
  node_id        text NOT NULL,
  pool_id        text NOT NULL,
  device_ids     text[] NOT NULL,
  vcpu           bigint NOT NULL,
  memory_mb      bigint NOT NULL,
  disk_gb        bigint NOT NULL,
  live           boolean NOT NULL,
  version        bigint NOT NULL CHECK (version > 0)
);
CREATE INDEX rm_fleet_allocations_live_node ON rm_fleet_allocations (node_id) WHERE live;

-- Point in time: who held which atom when. One row per (atom, reservation)
-- with the time it was held: [start, end) when booked, widened by
-- extensions, cut at the moment of release or expiry. A booking withdrawn
-- before it started keeps its row with an empty range, so that its version
-- survives and a replayed older event cannot bring it back.
CREATE TABLE rm_device_holders (
  device_id      text NOT NULL,
  reservation_id text NOT NULL,
  tenant_id      text NOT NULL,
  node_id        text NOT NULL,
  during         tstzrange NOT NULL,
  version        bigint NOT NULL CHECK (version > 0),
  updated_txid   xid8 NOT NULL,
  updated_seq    bigint NOT NULL,
  PRIMARY KEY (device_id, reservation_id)
);
CREATE INDEX rm_device_holders_reservation ON rm_device_holders (reservation_id);
CREATE INDEX rm_device_holders_during ON rm_device_holders USING gist (device_id, during);

-- Usage for billing, the "usage-windows" projection. rm_usage_allocations
-- is the reserved interval of each placed reservation; rm_usage_windows cuts
-- it into hourly windows aligned on UTC hours. Rule: a window's reserved_ms
-- is the overlap of [start, end) with [window_start, window_start + 1 h), in
-- milliseconds; device_ms is reserved_ms times the atoms held. Reserved
-- time is billed, not used time: an isolated node keeps billing. A release
-- or expiry cuts end at the moment it happened. Windows are final once the
-- reservation is in a terminal state; before that later windows may still
-- change (an extension adds some, a release removes some). The key
-- cmp:<allocationId>:<windowStart> is the billing deduplication key.
CREATE TABLE rm_usage_allocations (
  reservation_id text PRIMARY KEY,
  allocation_id  text NOT NULL,
  tenant_id      text NOT NULL,
  pool_id        text NOT NULL,
  node_id        text NOT NULL,
  devices        int NOT NULL,
  vcpu           bigint NOT NULL,
  memory_mb      bigint NOT NULL,
  disk_gb        bigint NOT NULL,
  start_ts       timestamptz NOT NULL,
  end_ts         timestamptz NOT NULL,
  final          boolean NOT NULL,
  version        bigint NOT NULL CHECK (version > 0)
);

CREATE TABLE rm_usage_windows (
  key            text PRIMARY KEY,
  allocation_id  text NOT NULL,
  reservation_id text NOT NULL,
  tenant_id      text NOT NULL,
  pool_id        text NOT NULL,
  node_id        text NOT NULL,
  window_start   timestamptz NOT NULL,
  window_end     timestamptz NOT NULL,
  reserved_ms    bigint NOT NULL CHECK (reserved_ms > 0),
  devices        int NOT NULL,
  device_ms      bigint NOT NULL,
  vcpu           bigint NOT NULL,
  memory_mb      bigint NOT NULL,
  disk_gb        bigint NOT NULL,
  final          boolean NOT NULL
);
CREATE INDEX rm_usage_windows_reservation ON rm_usage_windows (reservation_id);
CREATE INDEX rm_usage_windows_order ON rm_usage_windows (window_start, key);
CREATE INDEX rm_usage_windows_tenant ON rm_usage_windows (tenant_id, window_start, key);

-- Rebuild support. A rebuild replays the log into empty copies of a
-- projection's tables in schema rm_rebuild (the projection's own statements
-- reach them through search_path), then swaps them in with one transaction:
-- readers see the old tables until it commits and the new ones after.
-- The DDL lives here, in two functions that accept only rm_* table names, so
-- the program itself runs only sqlc statements.
-- +goose StatementBegin
CREATE FUNCTION rm_rebuild_prepare(tables text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t text;
BEGIN
  CREATE SCHEMA IF NOT EXISTS rm_rebuild;
  FOREACH t IN ARRAY tables LOOP
    IF t !~ '^rm_[a-z_]+$' THEN
      RAISE EXCEPTION 'rm_rebuild_prepare: % is not a read-model table', t;
    END IF;
    EXECUTE format('DROP TABLE IF EXISTS rm_rebuild.%I', t);
    EXECUTE format('CREATE TABLE rm_rebuild.%I (LIKE public.%I INCLUDING ALL)', t, t);
  END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rm_rebuild_swap(tables text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY tables LOOP
    IF t !~ '^rm_[a-z_]+$' THEN
      RAISE EXCEPTION 'rm_rebuild_swap: % is not a read-model table', t;
    END IF;
    EXECUTE format('DROP TABLE public.%I', t);
    EXECUTE format('ALTER TABLE rm_rebuild.%I SET SCHEMA public', t);
  END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION rm_rebuild_swap(text[]);
DROP FUNCTION rm_rebuild_prepare(text[]);
DROP SCHEMA IF EXISTS rm_rebuild CASCADE;
DROP TABLE rm_usage_windows;
DROP TABLE rm_usage_allocations;
DROP TABLE rm_device_holders;
DROP TABLE rm_fleet_allocations;
DROP TABLE rm_fleet_devices;
DROP TABLE rm_fleet_nodes;
DROP TABLE rm_fleet_pools;
DROP TABLE rm_reservations;
