-- name: PlacementConfirm :exec
-- What a placement attempt checks in Go on its results, checked in
-- PostgreSQL instead, for an attempt whose batch goes on to write the
-- reservation and COMMIT (a create's first attempt, booked from the atoms
-- its candidates query listed): it fails the transaction (BC409,
-- compute_require) unless, as of the locks the batch took before it,
--   * the node is the version the candidates query read (cordon, taints,
--     state and no-schedule reasons change only by a versioned update), in
--     the pool the attempt charged;
--   * each of the attempt's atoms and their GPUs (device_ids) is on the
--     node, healthy and not quarantined, and each atom bookable and not
--     retired (checkLockedAtoms);
--   * every atom was booked for the allocation (AllocationCreateWithBookings
--     leaves out an atom booked in the window concurrently);
--   * the node's and the pool's counters of every resource charged exist
--     (NodeResourceChargeMany and PoolCapacityRollupAdjustMany ran with
--     raise: a counter without room has failed the batch already).
SELECT compute_require(
  EXISTS (SELECT 1 FROM nodes n WHERE n.id = sqlc.arg(node_id) AND n.version = sqlc.arg(node_version)
                                  AND n.pool_id = sqlc.arg(pool_id))
  AND (SELECT count(*) FROM devices d
        WHERE d.id = ANY(sqlc.arg(device_ids)::text[]) AND d.node_id = sqlc.arg(node_id)
          AND d.health = 'healthy' AND NOT d.quarantined
          AND (d.id <> ALL(sqlc.arg(atoms)::text[]) OR (d.bookable AND NOT d.retired)))
      = cardinality(sqlc.arg(device_ids)::text[])
  AND (SELECT count(*) FROM device_bookings b WHERE b.allocation_id = sqlc.arg(allocation_id))
      = cardinality(sqlc.arg(atoms)::text[])
  AND (SELECT count(*) FROM node_resources r
        WHERE r.node_id = sqlc.arg(node_id) AND r.resource = ANY(sqlc.arg(resources)::text[]))
      = cardinality(sqlc.arg(resources)::text[])
  AND (SELECT count(*) FROM pool_capacity_rollup p
        WHERE p.pool_id = sqlc.arg(pool_id) AND p.resource = ANY(sqlc.arg(resources)::text[]))
      = cardinality(sqlc.arg(resources)::text[]),
  'placement on ' || sqlc.arg(node_id)::text || ' changed after its candidates were read');
