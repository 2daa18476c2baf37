-- +goose Up
-- webhook_slot_acquire's half of a tenant's slots for its failing endpoints
-- (0059) now also holds its endpoints that have never answered
-- (webhook_endpoints.answered, 0061). Before, an endpoint that had not
-- failed yet counted as answering: a tenant's new endpoints that hang took
-- every one of its slots until their first timeout, and as each failed the
-- next new one took its place, so the tenant's endpoint that answers got
-- none until all of them had failed once (20 new hanging endpoints: about
-- five rounds of the 15 s timeout). The rest of the function is 0059's.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_slot_acquire(
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
  v_failing    boolean;
  v_failing_n  int := 0;
BEGIN
  PERFORM 1 FROM leases l
   WHERE l.name = p_lease_name AND l.owner = p_lease_owner AND l.epoch = p_lease_epoch
     AND l.expires_at > compute_now()
     FOR SHARE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, true, NULL::timestamptz, 0, 0, compute_now();
    RETURN;
  END IF;
  -- The endpoint, then the delivery, FOR KEY SHARE: the order a delete
  -- removes them (the endpoint, then its deliveries by cascade). A delete in
  -- flight is waited for and then finds nothing here; one that comes later
  -- waits for this transaction. Without the locks the slot's insert could
  -- fail its foreign keys against a delete committed meanwhile, and with it
  -- the whole claim of a prefetch.
  SELECT e.tenant_id INTO v_tenant FROM webhook_endpoints e WHERE e.id = p_endpoint FOR KEY SHARE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM 1 FROM webhook_deliveries d WHERE d.id = p_delivery FOR KEY SHARE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM 1 FROM tenants t WHERE t.id = v_tenant FOR NO KEY UPDATE;
  DELETE FROM webhook_inflight i
   WHERE i.tenant_id = v_tenant AND i.until <= compute_now() AND i.delivery_id <> p_delivery;
  v_now := compute_now();
  SELECT e.breaker_open_until, e.consecutive_failures > 0 OR NOT e.answered INTO v_open, v_failing
    FROM webhook_endpoints e WHERE e.id = p_endpoint;
  SELECT count(*) INTO v_tenant_n FROM webhook_inflight i
   WHERE i.tenant_id = v_tenant AND i.until > v_now AND i.delivery_id <> p_delivery;
  SELECT count(*) INTO v_endpoint_n FROM webhook_inflight i
   WHERE i.endpoint_id = p_endpoint AND i.until > v_now AND i.delivery_id <> p_delivery;
  -- A suspect endpoint (its last attempt failed, or it has never
  -- answered) takes a slot only while the tenant's suspect endpoints hold
  -- fewer than half its slots: the others stay for its endpoints that
  -- answer.
  IF v_failing THEN
    SELECT count(*) INTO v_failing_n FROM webhook_inflight i
      JOIN webhook_endpoints e ON e.id = i.endpoint_id
     WHERE i.tenant_id = v_tenant AND i.until > v_now AND i.delivery_id <> p_delivery
       AND (e.consecutive_failures > 0 OR NOT e.answered);
  END IF;
  IF v_open > v_now OR v_tenant_n >= p_max_per_tenant OR v_endpoint_n >= p_max_per_endpoint
     OR (v_failing AND v_failing_n >= GREATEST(p_max_per_tenant / 2, 1)) THEN
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
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_slot_acquire(
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
  v_failing    boolean;
  v_failing_n  int := 0;
BEGIN
  PERFORM 1 FROM leases l
   WHERE l.name = p_lease_name AND l.owner = p_lease_owner AND l.epoch = p_lease_epoch
     AND l.expires_at > compute_now()
     FOR SHARE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, true, NULL::timestamptz, 0, 0, compute_now();
    RETURN;
  END IF;
  -- The endpoint, then the delivery, FOR KEY SHARE: the order a delete
  -- removes them (the endpoint, then its deliveries by cascade). A delete in
  -- flight is waited for and then finds nothing here; one that comes later
  -- waits for this transaction. Without the locks the slot's insert could
  -- fail its foreign keys against a delete committed meanwhile, and with it
  -- the whole claim of a prefetch.
  SELECT e.tenant_id INTO v_tenant FROM webhook_endpoints e WHERE e.id = p_endpoint FOR KEY SHARE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM 1 FROM webhook_deliveries d WHERE d.id = p_delivery FOR KEY SHARE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM 1 FROM tenants t WHERE t.id = v_tenant FOR NO KEY UPDATE;
  DELETE FROM webhook_inflight i
   WHERE i.tenant_id = v_tenant AND i.until <= compute_now() AND i.delivery_id <> p_delivery;
  v_now := compute_now();
  SELECT e.breaker_open_until, e.consecutive_failures > 0 INTO v_open, v_failing
    FROM webhook_endpoints e WHERE e.id = p_endpoint;
  SELECT count(*) INTO v_tenant_n FROM webhook_inflight i
   WHERE i.tenant_id = v_tenant AND i.until > v_now AND i.delivery_id <> p_delivery;
  SELECT count(*) INTO v_endpoint_n FROM webhook_inflight i
   WHERE i.endpoint_id = p_endpoint AND i.until > v_now AND i.delivery_id <> p_delivery;
  -- A failing endpoint (its last attempt failed) takes a slot only while
  -- the tenant's failing endpoints hold fewer than half its slots: the
  -- others stay for its endpoints that answer.
  IF v_failing THEN
    SELECT count(*) INTO v_failing_n FROM webhook_inflight i
      JOIN webhook_endpoints e ON e.id = i.endpoint_id
     WHERE i.tenant_id = v_tenant AND i.until > v_now AND i.delivery_id <> p_delivery
       AND e.consecutive_failures > 0;
  END IF;
  IF v_open > v_now OR v_tenant_n >= p_max_per_tenant OR v_endpoint_n >= p_max_per_endpoint
     OR (v_failing AND v_failing_n >= GREATEST(p_max_per_tenant / 2, 1)) THEN
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
