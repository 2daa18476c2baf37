-- +goose Up
-- Two things about a node's vCPU, memory and disk that only words carried
-- before (docs/concepts/nodes.md, "The vCPU, memory and disk its operator
-- configured"):
--
-- 1. A value out of range that the daemon's last report stated is kept in
--    node_resources.reported_out_of_range, as the shrink pending is kept in
--    pending_allocatable (migration 0072). The node's resync, when it adopts
--    a pending shrink, keeps the other resources' out-of-range refusals in
--    the ScalarsMismatch condition; it found them by matching the
--    condition's message, so that the decision hung on its wording. NULL:
--    the last report stated that resource in range, or not at all.
--
-- 2. The read model of nodes shows the shrink pending beside the
--    allocatable it would replace (vcpu_pending, memory_mb_pending,
--    disk_gb_pending; NULL: none), written by node.inventory_reconciled's
--    pendingScalars when newer than the last event that wrote them
--    (pending_version, as the groups of migrations 0040 and 0057).
--    Events of earlier releases do not carry it and leave it alone.
ALTER TABLE node_resources
  ADD COLUMN reported_out_of_range bigint,
  ADD CONSTRAINT node_resources_reported_is_out_of_range
    CHECK (reported_out_of_range IS NULL OR reported_out_of_range < 0 OR reported_out_of_range > 1099511627776);

-- What the conditions written so far say, read once, with the wording that
-- the releases up to this one wrote ("disk 2199023255552 configured is out
-- of range (0 to 1099511627776); 2000 kept").
UPDATE node_resources r SET reported_out_of_range = o.value
  FROM (SELECT n.id AS node_id, m[1] AS resource, max(m[2]::bigint) AS value
          FROM nodes n, jsonb_array_elements(n.conditions) c,
               regexp_matches(c->>'message', '(vcpu|memory|disk) (-?[0-9]+) configured is out of range \(0 to [0-9]+\)', 'g') m
         WHERE c->>'type' = 'ScalarsMismatch'
         GROUP BY n.id, m[1]) o
 WHERE r.node_id = o.node_id AND r.resource = o.resource
   AND (o.value < 0 OR o.value > 1099511627776);

ALTER TABLE rm_fleet_nodes
  ADD COLUMN vcpu_pending bigint,
  ADD COLUMN memory_mb_pending bigint,
  ADD COLUMN disk_gb_pending bigint,
  ADD COLUMN pending_version bigint NOT NULL DEFAULT 0;

-- Rows so far: the shrinks pending now, as of the node's version, so that
-- no older event overwrites them.
UPDATE rm_fleet_nodes m
   SET vcpu_pending = r.vcpu, memory_mb_pending = r.memory_mb, disk_gb_pending = r.disk_gb,
       pending_version = n.version
  FROM nodes n
  LEFT JOIN (SELECT node_id,
                    max(pending_allocatable) FILTER (WHERE resource = 'vcpu') AS vcpu,
                    max(pending_allocatable) FILTER (WHERE resource = 'memory') AS memory_mb,
                    max(pending_allocatable) FILTER (WHERE resource = 'disk') AS disk_gb
               FROM node_resources GROUP BY node_id) r ON r.node_id = n.id
 WHERE n.id = m.id;

-- +goose Down
ALTER TABLE rm_fleet_nodes
  DROP COLUMN IF EXISTS vcpu_pending,
  DROP COLUMN IF EXISTS memory_mb_pending,
  DROP COLUMN IF EXISTS disk_gb_pending,
  DROP COLUMN IF EXISTS pending_version;
ALTER TABLE node_resources DROP CONSTRAINT IF EXISTS node_resources_reported_is_out_of_range,
  DROP COLUMN IF EXISTS reported_out_of_range;
