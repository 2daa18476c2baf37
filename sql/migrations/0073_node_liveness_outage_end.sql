-- +goose Up
-- When the liveness sweep last found the control plane back from an outage
-- (the previous sweep more than the outage threshold ago: the database or
-- every controller was down). A node's absence is counted for the node job
-- timeout and for unreachable → lost only from then on (docs/concepts/nodes.md,
-- "Jobs of a node that is away"; node_absence_counted_from, 0074): while the
-- control plane was down its daemon could not reconnect, so that time says
-- nothing about the node. NULL: no outage seen.
ALTER TABLE node_liveness_sweeps ADD COLUMN outage_ended_at timestamptz;

-- +goose Down
ALTER TABLE node_liveness_sweeps DROP COLUMN outage_ended_at;
