-- +goose Up
-- A node job's idempotency key is unique per node and tenant, not per node
-- alone. Keys are often predictable (wf:<workflowId>:<stepId>); with one
-- key space per node, a tenant sharing a node with another could submit
-- the other's next key first, squatting it, or learn from the answer that
-- it had been used. Within a tenant the key still makes a retried workflow
-- step one job, whichever identity retries it.
ALTER TABLE node_commands DROP CONSTRAINT node_commands_node_id_idempotency_key_key;
ALTER TABLE node_commands ADD CONSTRAINT node_commands_node_tenant_key UNIQUE (node_id, tenant_id, idempotency_key);

-- +goose Down
ALTER TABLE node_commands DROP CONSTRAINT node_commands_node_tenant_key;
ALTER TABLE node_commands ADD CONSTRAINT node_commands_node_id_idempotency_key_key UNIQUE (node_id, idempotency_key);
