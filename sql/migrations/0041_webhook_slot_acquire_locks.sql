-- +goose Up
-- webhook_slot_acquire locks the endpoint and the delivery it takes a slot
-- for FOR KEY SHARE, in the order a delete removes them, so that a tenant
-- deleting an endpoint while one of its deliveries is being claimed cannot
-- fail the claim's statement (webhook_inflight's foreign keys): the
-- function returns no row for a deleted endpoint or delivery, as it did for
-- one deleted before it ran. The rest of the function is unchanged.
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
