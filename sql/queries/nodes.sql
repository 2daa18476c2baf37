-- name: NodeCreate :one
-- The node's site is its pool's (the foreign key (pool_id, site_id) checks
-- the copy); a missing pool leaves it NULL, which NOT NULL refuses.
INSERT INTO nodes (id, pool_id, site_id, taints)
VALUES (sqlc.arg(id), sqlc.arg(pool_id), (SELECT p.site_id FROM pools p WHERE p.id = sqlc.arg(pool_id)),
        sqlc.arg(taints)::text[])
RETURNING id, pool_id, cordoned, taints, no_schedule_reasons, state, version;

-- name: NodeGet :one
SELECT id, pool_id, cordoned, taints, no_schedule_reasons, state, version
  FROM nodes WHERE id = sqlc.arg(id);

-- name: NodeGetForUpdate :one
-- Operator changes to one node serialise on its row; the placer's FOR SHARE
-- locks make a cordon wait for placements in flight on the node. FOR NO KEY
-- UPDATE, not FOR UPDATE: the foreign-key checks of rows that reference the
-- node (a node command queued by a release) take FOR KEY SHARE, which FOR
-- UPDATE would block. A release that bumped the node's generation and then
-- queued its unassign deadlocked with a cordon that held the node FOR UPDATE
-- and then bumped the generation (found by the torture).
SELECT id, pool_id, cordoned, taints, no_schedule_reasons, state, version
  FROM nodes WHERE id = sqlc.arg(id) FOR NO KEY UPDATE;

-- name: NodeLockOfDevice :one
-- The node of a device, FOR SHARE, for the commands that change a GPU
-- (quarantine, health, mode): they refuse a retired node, and read its
-- state as of the lock, which a retire (FOR NO KEY UPDATE, then an update
-- of the row) must wait for. Taken before the device rows, the order of
-- the placer and of every node command that touches devices. No row: the
-- device does not exist (the caller's own lookup says so precisely).
SELECT n.id, n.state
  FROM nodes n
 WHERE n.id = (SELECT d.node_id FROM devices d WHERE d.id = sqlc.arg(device_id))
   FOR SHARE;

-- name: NodeLockForPlacement :one
-- Rule 4: the placer locks the chosen node FOR SHARE and reads its
-- eligibility as of the lock, so a concurrent cordon commits either before
-- (and is seen here) or after this placement. workload_network is its
-- pool's, for the assign (read, not locked: the lock is on the node only).
SELECT n.id, n.pool_id, n.cordoned, n.taints, n.no_schedule_reasons, n.state, n.version,
       (SELECT p.workload_network FROM pools p WHERE p.id = n.pool_id)::text AS workload_network
  FROM nodes n WHERE n.id = sqlc.arg(id) FOR SHARE;

-- name: NodeUpdateScheduling :execrows
-- Cordon, uncordon, taint and untaint: a versioned transition.
UPDATE nodes SET cordoned = sqlc.arg(cordoned), taints = sqlc.arg(taints)::text[], version = version + 1
 WHERE id = sqlc.arg(id) AND version = sqlc.arg(version);

-- name: NodePlacementCandidates :many
-- Nodes of the pool (pool_id) or of every pool of the site (site_id) with
-- what the placer needs to choose one and to explain why the others were
-- not chosen: all of them when max_nodes is NULL, else a sample of
-- max_nodes. The sample is the nodes that follow the point hashtext(seed)
-- (the reservation id) in the fixed order hashtext(node id), wrapping
-- around: two range scans of nodes_pool_place or nodes_site_place that read
-- max_nodes entries at most, so a large pool or site costs max_nodes
-- free-atom counts, not one sort of its nodes (migration 0029). The seed's
-- hash is a sub-select so that the planner does not know it: knowing it,
-- on a small site it reads the whole table whenever few hashes lie on one
-- side of the seed (a seq scan and a sort; 117 seeds in 300 over 120
-- nodes), while the default estimate keeps both laps on the index. Free atoms
-- are those matching the request that are bookable, healthy, not
-- quarantined (nor their GPU) and not booked in the window (looked up
-- through the btree device_bookings_device_end, not the GiST index; see
-- DeviceFreeAtoms). Nothing is locked here. A window that began is counted
-- from compute_now(), so a create sends this with its first statements,
-- before it has read the time. Only what the request asks for is counted
-- (with_atoms, with_vcpu, with_memory, with_disk); the rest reads 0, which
-- a request of none of it never lacks. Free scalars are counted against
-- a pending shrink where there is one, as NodeResourceChargeMany books.
-- With list_atoms, each node's free
-- atoms are listed too, so that a create's first attempt books without
-- reading them again (tryNode): their ids and GPUs, unsorted (an ordered
-- aggregate sorts for each node, which cost the query a third more), and
-- their model when they share one, else empty. The sample is small, and the
-- atoms are read to be counted anyway.
WITH candidates AS (
  SELECT s.id, s.pool_id, s.cordoned, s.taints, s.no_schedule_reasons, s.state FROM (
    (SELECT n.id, n.pool_id, n.cordoned, n.taints, n.no_schedule_reasons, n.state, 0 AS lap, hashtext(n.id) AS h FROM nodes n
      WHERE n.pool_id = sqlc.narg(pool_id)::text AND hashtext(n.id) >= (SELECT hashtext(sqlc.arg(seed)::text))
      ORDER BY hashtext(n.id), n.id LIMIT sqlc.narg(max_nodes)::int)
    UNION ALL
    (SELECT n.id, n.pool_id, n.cordoned, n.taints, n.no_schedule_reasons, n.state, 1, hashtext(n.id) FROM nodes n
      WHERE n.pool_id = sqlc.narg(pool_id)::text AND hashtext(n.id) < (SELECT hashtext(sqlc.arg(seed)::text))
      ORDER BY hashtext(n.id), n.id LIMIT sqlc.narg(max_nodes)::int)
    UNION ALL
    (SELECT n.id, n.pool_id, n.cordoned, n.taints, n.no_schedule_reasons, n.state, 0, hashtext(n.id) FROM nodes n
      WHERE n.site_id = sqlc.narg(site_id)::text AND hashtext(n.id) >= (SELECT hashtext(sqlc.arg(seed)::text))
      ORDER BY hashtext(n.id), n.id LIMIT sqlc.narg(max_nodes)::int)
    UNION ALL
    (SELECT n.id, n.pool_id, n.cordoned, n.taints, n.no_schedule_reasons, n.state, 1, hashtext(n.id) FROM nodes n
      WHERE n.site_id = sqlc.narg(site_id)::text AND hashtext(n.id) < (SELECT hashtext(sqlc.arg(seed)::text))
      ORDER BY hashtext(n.id), n.id LIMIT sqlc.narg(max_nodes)::int)
  ) s
  ORDER BY s.lap, s.h, s.id
  LIMIT sqlc.narg(max_nodes)::int
)
SELECT c.id, c.pool_id, c.cordoned, c.taints, c.no_schedule_reasons, c.state,
       coalesce(f.free_atoms, 0)::bigint AS free_atoms,
       coalesce(f.free_atom_ids, '{}')::text[] AS free_atom_ids,
       coalesce(f.free_atom_parents, '{}')::text[] AS free_atom_parents,
       coalesce(f.free_atom_model, '')::text AS free_atom_model,
       CASE WHEN sqlc.arg(with_vcpu)::boolean THEN
       coalesce((SELECT floor(least(r.allocatable, r.pending_allocatable) * r.ratio)::bigint - r.allocated
                   FROM node_resources r
                  WHERE r.node_id = c.id AND r.resource = 'vcpu'), 0) ELSE 0 END::bigint AS free_vcpu,
       CASE WHEN sqlc.arg(with_memory)::boolean THEN
       coalesce((SELECT floor(least(r.allocatable, r.pending_allocatable) * r.ratio)::bigint - r.allocated
                   FROM node_resources r
                  WHERE r.node_id = c.id AND r.resource = 'memory'), 0) ELSE 0 END::bigint AS free_memory,
       CASE WHEN sqlc.arg(with_disk)::boolean THEN
       coalesce((SELECT floor(least(r.allocatable, r.pending_allocatable) * r.ratio)::bigint - r.allocated
                   FROM node_resources r
                  WHERE r.node_id = c.id AND r.resource = 'disk'), 0) ELSE 0 END::bigint AS free_disk
  FROM candidates c
  LEFT JOIN LATERAL (
    SELECT count(*) AS free_atoms,
           array_agg(a.id) FILTER (WHERE sqlc.arg(list_atoms)::boolean) AS free_atom_ids,
           array_agg(coalesce(a.parent_id, '')) FILTER (WHERE sqlc.arg(list_atoms)::boolean) AS free_atom_parents,
           CASE WHEN min(a.model) = max(a.model) THEN min(a.model) END AS free_atom_model
      FROM devices a LEFT JOIN devices p ON p.id = a.parent_id
     WHERE sqlc.arg(with_atoms)::boolean AND a.node_id = c.id AND a.bookable AND a.kind = sqlc.arg(kind)
       AND (sqlc.narg(model)::text IS NULL OR a.model = sqlc.narg(model)::text)
       AND (sqlc.narg(profile)::text IS NULL OR a.profile = sqlc.narg(profile)::text)
       AND a.health = 'healthy' AND NOT a.quarantined
       AND (p.id IS NULL OR (p.health = 'healthy' AND NOT p.quarantined))
       AND (SELECT b.id FROM device_bookings b
                        WHERE b.device_id COLLATE "C" = a.id
                          AND coalesce(upper(b.during), 'infinity'::timestamptz)
                              >= LEAST(GREATEST(sqlc.arg(from_ts)::timestamptz, compute_now()), sqlc.arg(to_ts)::timestamptz)
                          AND range_overlaps(b.during,
                                             tstzrange(LEAST(GREATEST(sqlc.arg(from_ts)::timestamptz, compute_now()),
                                                             sqlc.arg(to_ts)::timestamptz),
                                                       sqlc.arg(to_ts)::timestamptz, '[)'))
                        ORDER BY coalesce(upper(b.during), 'infinity'::timestamptz) LIMIT 1) IS NULL
  ) f ON true
 ORDER BY c.id;
