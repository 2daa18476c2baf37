-- +goose NO TRANSACTION
-- +goose Up
-- The fleet's GPU models spelled alike (DeviceModelsNamedAlike: case,
-- spaces and punctuation aside), read by quotas.set and by a reservation
-- that would wait for a model no node has, to refuse "h100-80gb" when the
-- inventory says "H100-80GB". Without an index that read normalised every
-- device's model: 60-90 ms at 100,000 devices, on every pending create
-- naming a model, which is when the fleet is busiest. With it, the query
-- walks the distinct models under one normalised name, one index probe
-- each: well under a millisecond. Devices are written at inventory only,
-- so the write path of reservations pays nothing. Built CONCURRENTLY, as
-- 0060 and 0062: an interrupted build leaves an invalid index and no goose
-- record, so the next start drops it and builds it again.
DROP INDEX CONCURRENTLY IF EXISTS devices_model_alike;
CREATE INDEX CONCURRENTLY devices_model_alike
    ON devices (lower(regexp_replace(model, '[^A-Za-z0-9]', '', 'g')), model);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS devices_model_alike;
