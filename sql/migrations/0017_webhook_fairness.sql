-- +goose Up
-- Webhook fairness between tenants (docs/concepts/webhooks.md, "Limits").
--
-- The circuit breaker of an endpoint: consecutive_failures counts failed
-- attempts since the last success; once it reaches the threshold the
-- breaker opens until breaker_open_until (compute_now() + a cool-down that
-- doubles with breaker_trips, the openings since the last success). While it
-- is open, deliveries to the endpoint are deferred, not attempted. Any
-- success closes it. last_recover_at rate-limits POST …/recover.
ALTER TABLE webhook_endpoints
  ADD COLUMN consecutive_failures int NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
  ADD COLUMN breaker_trips        int NOT NULL DEFAULT 0 CHECK (breaker_trips >= 0),
  ADD COLUMN breaker_open_until   timestamptz,
  ADD COLUMN last_recover_at      timestamptz;

-- One row per delivery attempt in flight: the slot it holds against its
-- tenant's and its endpoint's in-flight caps. A slot is taken (guarded by
-- the caps, under the tenant row lock) before the HTTP attempt and deleted
-- in the transaction that records it; until bounds a slot whose holder
-- died, so a crash never leaks capacity for longer than that.
CREATE TABLE webhook_inflight (
  delivery_id uuid PRIMARY KEY REFERENCES webhook_deliveries ON DELETE CASCADE,
  endpoint_id text NOT NULL REFERENCES webhook_endpoints ON DELETE CASCADE,
  tenant_id   text NOT NULL,
  until       timestamptz NOT NULL
);
CREATE INDEX webhook_inflight_tenant ON webhook_inflight (tenant_id, until);
CREATE INDEX webhook_inflight_endpoint ON webhook_inflight (endpoint_id, until);

-- Takes a slot for one attempt of a delivery, in one round trip (a slot
-- freed by a fast endpoint is taken again within milliseconds, so the
-- round trips are the endpoint's throughput). In order, all in the
-- caller's statement (one transaction):
--   1. the fence: the caller's shard lease, FOR SHARE at its epoch
--      (fenced = true when it is lost: no slot);
--   2. the tenant row FOR NO KEY UPDATE, which serialises the takers of the
--      tenant's slots. The function is VOLATILE, so under READ COMMITTED
--      each statement after the lock sees every slot taken before it;
--   3. the tenant's slots whose holder died (past until) are deleted;
--   4. the guard: no slot while the endpoint's breaker is open, the tenant
--      has max_per_tenant slots or the endpoint max_per_endpoint; else the
--      slot, held until compute_now() + hold_seconds at most. A re-run of
--      the same delivery (after a crash) takes its own slot over.
-- No row: the endpoint is gone.
-- +goose StatementBegin
CREATE FUNCTION webhook_slot_acquire(
  p_delivery uuid, p_endpoint text, p_hold_seconds float8, p_max_per_tenant int, p_max_per_endpoint int,
  p_lease_name text, p_lease_owner text, p_lease_epoch bigint)
RETURNS TABLE (acquired boolean, fenced boolean, open_until timestamptz,
               tenant_slots int, endpoint_slots int, db_now timestamptz)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_tenant     text;
  v_open       timestamptz;
  v_tenant_n   int;
  v_endpoint_n int;
  v_now        timestamptz;
BEGIN
  PERFORM 1 FROM leases l
   WHERE l.name = p_lease_name AND l.owner = p_lease_owner AND l.epoch = p_lease_epoch
     AND l.expires_at > compute_now()
     FOR SHARE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, true, NULL::timestamptz, 0, 0, compute_now();
    RETURN;
  END IF;
  SELECT e.tenant_id INTO v_tenant FROM webhook_endpoints e WHERE e.id = p_endpoint;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM 1 FROM tenants t WHERE t.id = v_tenant FOR NO KEY UPDATE;
  DELETE FROM webhook_inflight i
   WHERE i.tenant_id = v_tenant AND i.until <= compute_now() AND i.delivery_id <> p_delivery;
  v_now := compute_now();
  SELECT e.breaker_open_until INTO v_open FROM webhook_endpoints e WHERE e.id = p_endpoint;
  SELECT count(*) INTO v_tenant_n FROM webhook_inflight i
   WHERE i.tenant_id = v_tenant AND i.until > v_now AND i.delivery_id <> p_delivery;
  SELECT count(*) INTO v_endpoint_n FROM webhook_inflight i
   WHERE i.endpoint_id = p_endpoint AND i.until > v_now AND i.delivery_id <> p_delivery;
  IF v_open > v_now OR v_tenant_n >= p_max_per_tenant OR v_endpoint_n >= p_max_per_endpoint THEN
    RETURN QUERY SELECT false, false, v_open, v_tenant_n, v_endpoint_n, v_now;
    RETURN;
  END IF;
  INSERT INTO webhook_inflight AS i (delivery_id, endpoint_id, tenant_id, until)
  VALUES (p_delivery, p_endpoint, v_tenant, v_now + make_interval(secs => p_hold_seconds))
  ON CONFLICT (delivery_id) DO UPDATE SET until = EXCLUDED.until;
  RETURN QUERY SELECT true, false, v_open, v_tenant_n, v_endpoint_n, v_now;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION webhook_slot_acquire(uuid, text, float8, int, int, text, text, bigint);
DROP TABLE webhook_inflight;
ALTER TABLE webhook_endpoints
  DROP COLUMN last_recover_at,
  DROP COLUMN breaker_open_until,
  DROP COLUMN breaker_trips,
  DROP COLUMN consecutive_failures;
