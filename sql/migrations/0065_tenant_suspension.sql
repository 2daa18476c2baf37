-- +goose Up
-- Tenant suspension (docs/concepts/tenant-suspension.md): an operator
-- suspends a tenant (non-payment, abuse, an incident) and resumes it later.
-- suspended_at and suspended_reason are set together or not at all;
-- suspension_version counts the suspends and resumes, and is carried by
-- their events (tenant.suspended, tenant.resumed).
ALTER TABLE tenants
  ADD COLUMN suspended_at       timestamptz,
  ADD COLUMN suspended_reason   text,
  ADD COLUMN suspension_version bigint NOT NULL DEFAULT 0,
  ADD CONSTRAINT tenants_suspension_check
      CHECK ((suspended_at IS NULL) = (suspended_reason IS NULL)
             AND (suspended_reason IS NULL OR suspended_reason <> ''));

-- A suspend or resume appends one change per token of the tenant, so that
-- every API process drops the tokens from its cache and ends their event
-- streams (suspended), or forgets that it refused them (resumed).
ALTER TABLE authz_changes DROP CONSTRAINT authz_changes_change_check;
ALTER TABLE authz_changes ADD CONSTRAINT authz_changes_change_check
  CHECK (change IN ('created', 'revoked', 'suspended', 'resumed'));

-- The guard: no reservation is created or extended, and no instance
-- created, for a suspended tenant, whichever statement or command writes
-- it. The tenant row is read FOR KEY SHARE, which waits for a suspend in
-- progress (it locks the row FOR UPDATE first) and then reads the row as
-- that suspend left it: a create that passed the API's check just before
-- the suspend committed is refused here. A create that took this lock
-- first commits before the suspend goes on, and is an existing
-- reservation to it. SQLSTATE BC001 is TENANT_SUSPENDED (pg.Translate).
-- +goose StatementBegin
CREATE FUNCTION tenant_refuse_suspended() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_reason text;
BEGIN
  SELECT t.suspended_reason INTO v_reason FROM tenants t WHERE t.id = NEW.tenant_id FOR KEY SHARE;
  IF v_reason IS NOT NULL THEN
    RAISE EXCEPTION 'tenant % is suspended: %', NEW.tenant_id, v_reason
      USING ERRCODE = 'BC001', DETAIL = v_reason;
  END IF;
  RETURN NEW;
END $$;
-- +goose StatementEnd

CREATE TRIGGER reservations_tenant_not_suspended BEFORE INSERT ON reservations
  FOR EACH ROW EXECUTE FUNCTION tenant_refuse_suspended();
-- Only an extension: a release, a shortening or a state change is not.
CREATE TRIGGER reservations_extend_tenant_not_suspended BEFORE UPDATE OF during ON reservations
  FOR EACH ROW WHEN (upper(NEW.during) > upper(OLD.during)) EXECUTE FUNCTION tenant_refuse_suspended();
CREATE TRIGGER instances_tenant_not_suspended BEFORE INSERT ON instances
  FOR EACH ROW EXECUTE FUNCTION tenant_refuse_suspended();

-- +goose Down
DROP TRIGGER instances_tenant_not_suspended ON instances;
DROP TRIGGER reservations_extend_tenant_not_suspended ON reservations;
DROP TRIGGER reservations_tenant_not_suspended ON reservations;
DROP FUNCTION tenant_refuse_suspended();
DELETE FROM authz_changes WHERE change IN ('suspended', 'resumed');
ALTER TABLE authz_changes DROP CONSTRAINT authz_changes_change_check;
ALTER TABLE authz_changes ADD CONSTRAINT authz_changes_change_check CHECK (change IN ('created', 'revoked'));
ALTER TABLE tenants DROP CONSTRAINT tenants_suspension_check,
  DROP COLUMN suspension_version, DROP COLUMN suspended_reason, DROP COLUMN suspended_at;
