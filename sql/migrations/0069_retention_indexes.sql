-- +goose NO TRANSACTION
-- +goose Up
-- Indexes of two retentions (docs/concepts/retention.md). Built
-- CONCURRENTLY, as 0060, 0062 and 0066: rm_fleet_allocations holds a row
-- for every reservation ever placed, and a plain build would hold the fleet
-- projection's writes for as long as it reads them. An interrupted build
-- leaves an invalid index and no goose record, so the next start drops it
-- and builds it again.
--
-- The pruner deletes join tokens that were never used once they stopped
-- being usable (expired or revoked) longer ago than the work retention
-- (RetentionJoinTokensPrune). This index finds the oldest of them without
-- reading the used ones, which stay.
DROP INDEX CONCURRENTLY IF EXISTS node_join_tokens_unusable;
CREATE INDEX CONCURRENTLY node_join_tokens_unusable ON node_join_tokens
  (least(expires_at, coalesce(revoked_at, 'infinity'::timestamptz))) WHERE used_at IS NULL;

-- The pruner deletes the fleet read model's rows of ended reservations
-- once their events are pruned (RetentionFleetAllocationsPrune). This
-- index lists those rows without reading the live ones.
DROP INDEX CONCURRENTLY IF EXISTS rm_fleet_allocations_ended;
CREATE INDEX CONCURRENTLY rm_fleet_allocations_ended ON rm_fleet_allocations (reservation_id) WHERE NOT live;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS rm_fleet_allocations_ended; -- a rebuild (LIKE … INCLUDING ALL) renames it
DROP INDEX CONCURRENTLY IF EXISTS node_join_tokens_unusable;
