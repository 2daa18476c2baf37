-- name: RmFleetNodeRegister :execrows
-- A node.registered event creates the node at version 1, every field
-- written as of that version; a replay changes nothing.
INSERT INTO rm_fleet_nodes (id, pool_id, cordoned, taints, vcpu, memory_mb, disk_gb, version,
       registered_at, updated_at, updated_txid, updated_seq,
       scheduling_version, state_version, reasons_version, conditions_version, scalars_version)
VALUES (sqlc.arg(id), sqlc.arg(pool_id), sqlc.arg(cordoned), sqlc.arg(taints)::text[], sqlc.arg(vcpu),
        sqlc.arg(memory_mb), sqlc.arg(disk_gb), sqlc.arg(version), sqlc.arg(at)::timestamptz,
        sqlc.arg(at)::timestamptz, sqlc.arg(txid)::xid8, sqlc.arg(seq)::bigint,
        sqlc.arg(version), sqlc.arg(version), sqlc.arg(version), sqlc.arg(version), sqlc.arg(version))
ON CONFLICT (id) DO NOTHING;

-- name: RmFleetNodeUpdateScheduling :execrows
-- Cordon, uncordon, taint and untaint events carry both scheduling fields:
-- applied when newer than the last event that wrote them (the log may
-- carry a node's events out of version order: migration 0040). The row's
-- version, and when it was updated, follow the newest event applied.
UPDATE rm_fleet_nodes
   SET cordoned = sqlc.arg(cordoned), taints = sqlc.arg(taints)::text[], scheduling_version = sqlc.arg(version),
       version = greatest(version, sqlc.arg(version)),
       updated_at = CASE WHEN version < sqlc.arg(version) THEN sqlc.arg(at)::timestamptz ELSE updated_at END,
       updated_txid = CASE WHEN version < sqlc.arg(version) THEN sqlc.arg(txid)::xid8 ELSE updated_txid END,
       updated_seq = CASE WHEN version < sqlc.arg(version) THEN sqlc.arg(seq)::bigint ELSE updated_seq END
 WHERE id = sqlc.arg(id) AND scheduling_version < sqlc.arg(version);

-- name: RmFleetNodeUpdateStatus :execrows
-- Liveness, drain, retire and inventory events: the node's state,
-- no-schedule reasons and conditions, (an inventory that changed them)
-- its vCPU, memory and disk, and (an inventory, pending_known) the shrinks
-- of them that wait for its bookings to fit (NULL: none), each only when
-- the event carries it and is newer than the last event that wrote that
-- field (migrations 0040, 0057, 0075).
UPDATE rm_fleet_nodes
   SET state = CASE WHEN sqlc.narg(state)::text IS NOT NULL AND state_version < sqlc.arg(version)
                    THEN sqlc.narg(state)::text ELSE state END,
       state_version = CASE WHEN sqlc.narg(state)::text IS NOT NULL
                            THEN greatest(state_version, sqlc.arg(version)) ELSE state_version END,
       no_schedule_reasons = CASE WHEN sqlc.narg(no_schedule_reasons)::text[] IS NOT NULL AND reasons_version < sqlc.arg(version)
                                  THEN sqlc.narg(no_schedule_reasons)::text[] ELSE no_schedule_reasons END,
       reasons_version = CASE WHEN sqlc.narg(no_schedule_reasons)::text[] IS NOT NULL
                              THEN greatest(reasons_version, sqlc.arg(version)) ELSE reasons_version END,
       conditions = CASE WHEN sqlc.narg(conditions)::jsonb IS NOT NULL AND conditions_version < sqlc.arg(version)
                         THEN sqlc.narg(conditions)::jsonb ELSE conditions END,
       conditions_version = CASE WHEN sqlc.narg(conditions)::jsonb IS NOT NULL
                                 THEN greatest(conditions_version, sqlc.arg(version)) ELSE conditions_version END,
       vcpu = CASE WHEN sqlc.narg(vcpu)::bigint IS NOT NULL AND scalars_version < sqlc.arg(version)
                   THEN sqlc.narg(vcpu)::bigint ELSE vcpu END,
       memory_mb = CASE WHEN sqlc.narg(vcpu)::bigint IS NOT NULL AND scalars_version < sqlc.arg(version)
                        THEN sqlc.narg(memory_mb)::bigint ELSE memory_mb END,
       disk_gb = CASE WHEN sqlc.narg(vcpu)::bigint IS NOT NULL AND scalars_version < sqlc.arg(version)
                      THEN sqlc.narg(disk_gb)::bigint ELSE disk_gb END,
       scalars_version = CASE WHEN sqlc.narg(vcpu)::bigint IS NOT NULL
                              THEN greatest(scalars_version, sqlc.arg(version)) ELSE scalars_version END,
       vcpu_pending = CASE WHEN sqlc.arg(pending_known)::boolean AND pending_version < sqlc.arg(version)
                           THEN sqlc.narg(vcpu_pending)::bigint ELSE vcpu_pending END,
       memory_mb_pending = CASE WHEN sqlc.arg(pending_known)::boolean AND pending_version < sqlc.arg(version)
                                THEN sqlc.narg(memory_mb_pending)::bigint ELSE memory_mb_pending END,
       disk_gb_pending = CASE WHEN sqlc.arg(pending_known)::boolean AND pending_version < sqlc.arg(version)
                              THEN sqlc.narg(disk_gb_pending)::bigint ELSE disk_gb_pending END,
       pending_version = CASE WHEN sqlc.arg(pending_known)::boolean
                              THEN greatest(pending_version, sqlc.arg(version)) ELSE pending_version END,
       version = greatest(version, sqlc.arg(version)),
       updated_at = CASE WHEN version < sqlc.arg(version) THEN sqlc.arg(at)::timestamptz ELSE updated_at END,
       updated_txid = CASE WHEN version < sqlc.arg(version) THEN sqlc.arg(txid)::xid8 ELSE updated_txid END,
       updated_seq = CASE WHEN version < sqlc.arg(version) THEN sqlc.arg(seq)::bigint ELSE updated_seq END
 WHERE id = sqlc.arg(id)
   AND ((sqlc.narg(state)::text IS NOT NULL AND state_version < sqlc.arg(version))
     OR (sqlc.narg(no_schedule_reasons)::text[] IS NOT NULL AND reasons_version < sqlc.arg(version))
     OR (sqlc.narg(conditions)::jsonb IS NOT NULL AND conditions_version < sqlc.arg(version))
     OR (sqlc.narg(vcpu)::bigint IS NOT NULL AND scalars_version < sqlc.arg(version))
     OR (sqlc.arg(pending_known)::boolean AND pending_version < sqlc.arg(version)));

-- name: RmFleetNodeGet :one
-- A node with its capacity (allocatable scaled by its pool's ratios),
-- utilization (the sum of its live allocations) and liveness. Three columns
-- change without events and are read from the write model at read time:
-- the last heartbeat (gateways flush it every 5 s), the desired generation
-- (node_desired; no row is generation 0) and the generation the daemon
-- reports as applied (read together, so that they compare in one snapshot). read_at is compute_now(), for the age.
SELECT n.id, n.pool_id, n.cordoned, n.taints, n.vcpu, n.memory_mb, n.disk_gb, n.version,
       n.registered_at, n.updated_at, n.state, n.no_schedule_reasons, n.conditions,
       n.vcpu_pending, n.memory_mb_pending, n.disk_gb_pending,
       coalesce(w.generation, 0)::bigint AS generation,
       coalesce(s.observed_generation, 0)::bigint AS observed_generation,
       s.last_seen_at, compute_now()::timestamptz AS read_at,
       floor(n.vcpu * coalesce(p.cpu_ratio, 1))::bigint AS vcpu_capacity,
       floor(n.memory_mb * coalesce(p.memory_ratio, 1))::bigint AS memory_capacity,
       floor(n.disk_gb * coalesce(p.disk_ratio, 1))::bigint AS disk_capacity,
       coalesce(a.vcpu, 0)::bigint AS vcpu_allocated,
       coalesce(a.memory_mb, 0)::bigint AS memory_allocated,
       coalesce(a.disk_gb, 0)::bigint AS disk_allocated,
       coalesce(a.reservations, 0)::bigint AS live_reservations
  FROM rm_fleet_nodes n
  LEFT JOIN rm_fleet_pools p ON p.id = n.pool_id
  LEFT JOIN LATERAL (SELECT sum(x.vcpu) AS vcpu, sum(x.memory_mb) AS memory_mb, sum(x.disk_gb) AS disk_gb,
                            count(*) AS reservations
                       FROM rm_fleet_allocations x WHERE x.node_id = n.id AND x.live) a ON true
  LEFT JOIN node_desired w ON w.node_id = n.id
  LEFT JOIN node_sessions s ON s.node_id = n.id
 WHERE n.id = sqlc.arg(id);

-- name: RmFleetNodeList :many
-- A keyset page of nodes in id order, optionally of one pool; the columns
-- of RmFleetNodeGet.
SELECT n.id, n.pool_id, n.cordoned, n.taints, n.vcpu, n.memory_mb, n.disk_gb, n.version,
       n.registered_at, n.updated_at, n.state, n.no_schedule_reasons, n.conditions,
       n.vcpu_pending, n.memory_mb_pending, n.disk_gb_pending,
       coalesce(w.generation, 0)::bigint AS generation,
       coalesce(s.observed_generation, 0)::bigint AS observed_generation,
       s.last_seen_at, compute_now()::timestamptz AS read_at,
       floor(n.vcpu * coalesce(p.cpu_ratio, 1))::bigint AS vcpu_capacity,
       floor(n.memory_mb * coalesce(p.memory_ratio, 1))::bigint AS memory_capacity,
       floor(n.disk_gb * coalesce(p.disk_ratio, 1))::bigint AS disk_capacity,
       coalesce(a.vcpu, 0)::bigint AS vcpu_allocated,
       coalesce(a.memory_mb, 0)::bigint AS memory_allocated,
       coalesce(a.disk_gb, 0)::bigint AS disk_allocated,
       coalesce(a.reservations, 0)::bigint AS live_reservations
  FROM rm_fleet_nodes n
  LEFT JOIN rm_fleet_pools p ON p.id = n.pool_id
  LEFT JOIN LATERAL (SELECT sum(x.vcpu) AS vcpu, sum(x.memory_mb) AS memory_mb, sum(x.disk_gb) AS disk_gb,
                            count(*) AS reservations
                       FROM rm_fleet_allocations x WHERE x.node_id = n.id AND x.live) a ON true
  LEFT JOIN node_desired w ON w.node_id = n.id
  LEFT JOIN node_sessions s ON s.node_id = n.id
 WHERE (sqlc.narg(pool_id)::text IS NULL OR n.pool_id = sqlc.narg(pool_id)::text)
   AND n.id > sqlc.arg(after_id)::text
 ORDER BY n.id
 LIMIT sqlc.arg(max_rows);

-- name: RmFleetNodeListAll :many
SELECT id, pool_id, cordoned, taints, vcpu, memory_mb, disk_gb, version, registered_at, updated_at,
       updated_txid, updated_seq, state, no_schedule_reasons, conditions,
       vcpu_pending, memory_mb_pending, disk_gb_pending
  FROM rm_fleet_nodes ORDER BY id;

-- name: RmFleetNodeSeed :exec
-- A rebuild starts from the write model (projections.Seeder): every node at
-- its version, each field (and each field's version) as of that version,
-- so that the replay applies only the events newer than it. When it was
-- last updated is the time and position of the event that wrote that
-- version, while retention keeps it; once pruned, the registration time and
-- position 0, before every retained event.
INSERT INTO rm_fleet_nodes (id, pool_id, cordoned, taints, vcpu, memory_mb, disk_gb, version,
       registered_at, updated_at, updated_txid, updated_seq, state, no_schedule_reasons, conditions,
       vcpu_pending, memory_mb_pending, disk_gb_pending,
       scheduling_version, state_version, reasons_version, conditions_version, scalars_version, pending_version)
SELECT n.id, n.pool_id, n.cordoned, n.taints,
       coalesce(r.vcpu, 0), coalesce(r.memory_mb, 0), coalesce(r.disk_gb, 0), n.version,
       n.created_at, coalesce(e.time, n.created_at), coalesce(e.txid, '0'::xid8), coalesce(e.seq, 0),
       n.state, n.no_schedule_reasons, n.conditions,
       r.vcpu_pending, r.memory_mb_pending, r.disk_gb_pending,
       n.version, n.version, n.version, n.version, n.version, n.version
  FROM nodes n
  LEFT JOIN (SELECT node_id,
                    max(allocatable) FILTER (WHERE resource = 'vcpu') AS vcpu,
                    max(allocatable) FILTER (WHERE resource = 'memory') AS memory_mb,
                    max(allocatable) FILTER (WHERE resource = 'disk') AS disk_gb,
                    max(pending_allocatable) FILTER (WHERE resource = 'vcpu') AS vcpu_pending,
                    max(pending_allocatable) FILTER (WHERE resource = 'memory') AS memory_mb_pending,
                    max(pending_allocatable) FILTER (WHERE resource = 'disk') AS disk_gb_pending
               FROM node_resources GROUP BY node_id) r ON r.node_id = n.id
  LEFT JOIN outbox e ON e.subject = 'nodes/' || n.id AND (e.data->>'version')::bigint = n.version;
