-- +goose Up
-- A pool chooses its workloads' network mode, and every assign of an
-- allocation on it carries the mode to the daemon (wire.AssignPayload's
-- Network): 'none' (a network namespace with loopback only, what every
-- workload had before), 'bridge' (a namespace of its own with NAT egress;
-- the node, metadata addresses, the control plane and other allocations
-- refused) or 'host' (the node's network: single-tenant pools only).
-- Existing pools keep 'none'. The fleet read model copies it from
-- pool.created; events written before it lack the field, which means none.
ALTER TABLE pools ADD COLUMN workload_network text NOT NULL DEFAULT 'none'
  CHECK (workload_network IN ('none', 'bridge', 'host'));
ALTER TABLE rm_fleet_pools ADD COLUMN workload_network text NOT NULL DEFAULT 'none';

-- +goose Down
ALTER TABLE rm_fleet_pools DROP COLUMN workload_network;
ALTER TABLE pools DROP COLUMN workload_network;
