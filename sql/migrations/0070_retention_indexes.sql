-- +goose Up
-- Indexes of two retentions (docs/concepts/retention.md).
--
-- The pruner deletes join tokens that were never used once they stopped
-- being usable (expired or revoked) longer ago than the work retention
-- (RetentionJoinTokensPrune). This index finds the oldest of them without
-- reading the used ones, which stay.
CREATE INDEX node_join_tokens_unusable ON node_join_tokens
  (least(expires_at, coalesce(revoked_at, 'infinity'::timestamptz))) WHERE used_at IS NULL;

-- The pruner deletes the fleet read model's rows of ended reservations
-- once their events are pruned (RetentionFleetAllocationsPrune). This
-- index lists those rows without reading the live ones.
CREATE INDEX rm_fleet_allocations_ended ON rm_fleet_allocations (reservation_id) WHERE NOT live;

-- +goose Down
DROP INDEX IF EXISTS rm_fleet_allocations_ended; -- a rebuild (LIKE … INCLUDING ALL) renames it
DROP INDEX node_join_tokens_unusable;
