-- +goose Up
-- A model quota's key is gpu:<model> for any model a GPU can have. The
-- rule of 0007 allowed only letters, digits, '.', '_' and '-' after gpu:,
-- while devices take the model as the inventory reports it, and
-- nvidia-smi's names have spaces ("NVIDIA H100 80GB HBM3"): such GPUs
-- could have no model quota. The rule now follows core.ValidGPUModel, as
-- a backstop to it: 1 to 128 bytes of model, no control characters. It
-- only widens the old rule, so every existing row keeps to it; quota_usage
-- holds a row per tenant and resource, so the check's scan is short.
ALTER TABLE quota_usage DROP CONSTRAINT quota_usage_resource_check;
ALTER TABLE quota_usage ADD CONSTRAINT quota_usage_resource_check CHECK (
  resource IN ('gpu', 'vcpu', 'memory', 'disk')
  OR (resource ~ '^gpu:[^[:cntrl:]]+$' AND octet_length(resource) <= 4 + 128));

-- +goose Down
-- Fails while a quota names a model the old rule refuses: delete those
-- quotas first.
ALTER TABLE quota_usage DROP CONSTRAINT quota_usage_resource_check;
ALTER TABLE quota_usage ADD CONSTRAINT quota_usage_resource_check
  CHECK (resource ~ '^(gpu|gpu:[A-Za-z0-9._-]+|vcpu|memory|disk)$');
