-- +goose Up
-- The due rows of one kind in one shard, oldest first: WorkQueueClaim reads
-- each (shard, kind) pair's first few from it and claims the oldest of
-- those, so a claim costs the same however many rows are due. On
-- (shard, not_before) it had to fetch and sort every due row of its shards:
-- with one tenant's 560,000 webhook deliveries due, 270 ms a claim, and the
-- delivery pool, which claims as each slot frees, delivered about 7 a
-- second, every other tenant's deliveries waiting behind that backlog.
CREATE INDEX work_queue_due_by_kind ON work_queue (kind, shard, not_before);
DROP INDEX work_queue_due;

-- +goose Down
CREATE INDEX work_queue_due ON work_queue (shard, not_before);
DROP INDEX work_queue_due_by_kind;
