-- +goose Up
-- The fleet: sites hold pools, pools hold nodes, nodes hold GPUs and their
-- atoms. Every aggregate carries a version; a transition is
-- UPDATE ... WHERE id = $id AND version = $v, and zero rows is CONFLICT.
CREATE TABLE sites (
  id         text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  name       text NOT NULL CHECK (name <> ''),
  version    bigint NOT NULL DEFAULT 1 CHECK (version > 0),
  created_at timestamptz NOT NULL DEFAULT compute_now()
);

-- Overcommit ratios scale a node's allocatable scalars: a node with 64 vCPU
-- in a pool with cpu_ratio 2 can carry 128 vCPU of reservations. lost_after
-- only exists for provider and vps-host pools: bare metal is never lost
-- automatically.
CREATE TABLE pools (
  id           text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  site_id      text NOT NULL REFERENCES sites,
  kind         text NOT NULL CHECK (kind IN ('bare-metal', 'provider', 'vps-host')),
  lost_after_seconds int CHECK (lost_after_seconds > 0),
  cpu_ratio    numeric NOT NULL DEFAULT 1 CHECK (cpu_ratio >= 1 AND cpu_ratio <= 64),
  memory_ratio numeric NOT NULL DEFAULT 1 CHECK (memory_ratio >= 1 AND memory_ratio <= 64),
  disk_ratio   numeric NOT NULL DEFAULT 1 CHECK (disk_ratio >= 1 AND disk_ratio <= 64),
  version      bigint NOT NULL DEFAULT 1 CHECK (version > 0),
  created_at   timestamptz NOT NULL DEFAULT compute_now(),
  CHECK (kind <> 'bare-metal' OR lost_after_seconds IS NULL)
);
CREATE INDEX pools_site ON pools (site_id, id);

-- The placer locks node rows FOR SHARE; cordoning, tainting and marking a
-- node unreachable update these same rows, so whichever commits second sees
-- the first. Counters are NOT here (see node_resources): updating a row that
-- other transactions hold FOR SHARE deadlocks constantly.
CREATE TABLE nodes (
  id         text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9.-]{0,62}$'),
  pool_id    text NOT NULL REFERENCES pools,
  cordoned   boolean NOT NULL DEFAULT false,
  -- NoSchedule taints; a reservation may use the node only if it tolerates
  -- every one (taints <@ tolerations).
  taints     text[] NOT NULL DEFAULT '{}',
  -- Reasons set by the system (e.g. 'unreachable'); any reason keeps the
  -- node out of placement.
  no_schedule_reasons text[] NOT NULL DEFAULT '{}',
  state      text NOT NULL DEFAULT 'registered'
             CHECK (state IN ('registered', 'connected', 'disconnected', 'unreachable', 'lost', 'retired')),
  generation bigint NOT NULL DEFAULT 1 CHECK (generation > 0),
  version    bigint NOT NULL DEFAULT 1 CHECK (version > 0),
  created_at timestamptz NOT NULL DEFAULT compute_now()
);
CREATE INDEX nodes_pool ON nodes (pool_id, id);

-- Devices are GPUs (kind 'gpu', no parent) and their atoms: MIG instances
-- '<uuid>/mig-<k>' and time-slice or MPS slots '<uuid>/s<k>'. The atom rule:
-- a parent and its children are never both bookable. A GPU is bookable
-- exactly when its mode is exclusive (checked here); children exist only for
-- the other modes (written only by gpus.setMode, checked by the invariants).
CREATE TABLE devices (
  id          text PRIMARY KEY CHECK (id <> ''),
  parent_id   text REFERENCES devices,
  node_id     text NOT NULL REFERENCES nodes,
  kind        text NOT NULL CHECK (kind IN ('gpu', 'mig', 'slot')),
  model       text NOT NULL CHECK (model <> ''),
  memory_mb   bigint NOT NULL CHECK (memory_mb > 0),
  -- GPUs only: how the GPU is shared.
  mode        text CHECK (mode IN ('exclusive', 'mig', 'time-slice', 'mps')),
  -- Atoms only: the MIG profile ('1g.10gb') or the slot kind ('time-slice', 'mps').
  profile     text,
  bookable    boolean NOT NULL,
  -- Atoms of an earlier layout are retired, not deleted: past bookings keep
  -- referring to them. A later layout may bring the same id back to life.
  retired     boolean NOT NULL DEFAULT false,
  health      text NOT NULL DEFAULT 'healthy' CHECK (health IN ('healthy', 'unhealthy')),
  quarantined boolean NOT NULL DEFAULT false,
  version     bigint NOT NULL DEFAULT 1 CHECK (version > 0),
  created_at  timestamptz NOT NULL DEFAULT compute_now(),
  CHECK ((kind = 'gpu') = (parent_id IS NULL)),
  CHECK ((kind = 'gpu') = (mode IS NOT NULL)),
  CHECK ((kind = 'gpu') = (profile IS NULL)),
  CHECK (kind <> 'gpu' OR bookable = (mode = 'exclusive')),
  CHECK (kind <> 'gpu' OR NOT retired),
  CHECK (kind = 'gpu' OR bookable = NOT retired)
);
CREATE INDEX devices_node ON devices (node_id, id);
CREATE INDEX devices_parent ON devices (parent_id, id);

-- Scalar counters, one row per node and resource, apart from the nodes rows
-- the placer locks FOR SHARE. Changed only by guarded updates
-- (allocated + x <= floor(allocatable * ratio)); the CHECK is the backstop.
CREATE TABLE node_resources (
  node_id     text NOT NULL REFERENCES nodes,
  resource    text NOT NULL CHECK (resource IN ('vcpu', 'memory', 'disk')),
  allocatable bigint NOT NULL CHECK (allocatable >= 0),
  ratio       numeric NOT NULL CHECK (ratio >= 1),
  allocated   bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (node_id, resource),
  CONSTRAINT node_resources_within_capacity
    CHECK (allocated >= 0 AND allocated <= floor(allocatable * ratio))
);

-- Per pool and resource: capacity (sum of floor(allocatable * ratio)) and
-- allocated, kept in the same transactions as node_resources so that a
-- pool's capacity reads one row per resource.
CREATE TABLE pool_capacity_rollup (
  pool_id   text NOT NULL REFERENCES pools,
  resource  text NOT NULL CHECK (resource IN ('vcpu', 'memory', 'disk')),
  capacity  bigint NOT NULL DEFAULT 0 CHECK (capacity >= 0),
  allocated bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (pool_id, resource),
  CONSTRAINT pool_capacity_rollup_within_capacity CHECK (allocated >= 0 AND allocated <= capacity)
);

-- +goose Down
DROP TABLE pool_capacity_rollup;
DROP TABLE node_resources;
DROP TABLE devices;
DROP TABLE nodes;
DROP TABLE pools;
DROP TABLE sites;
