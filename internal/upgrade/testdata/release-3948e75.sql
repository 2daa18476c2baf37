--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: btree_gist; Type: EXTENSION; Schema: -; Owner: -
--

CREATE EXTENSION IF NOT EXISTS btree_gist WITH SCHEMA public;


--
-- Name: compute_now(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.compute_now() RETURNS timestamp with time zone
    LANGUAGE sql STABLE
    AS $$ SELECT now() $$;


--
-- Name: compute_use_sim_clock(boolean); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.compute_use_sim_clock(enabled boolean) RETURNS void
    LANGUAGE plpgsql
    AS $_$
BEGIN
  IF enabled THEN
    INSERT INTO compute_sim_clock (id, ts) VALUES (1, now()) ON CONFLICT (id) DO NOTHING;
    EXECUTE 'CREATE OR REPLACE FUNCTION compute_now() RETURNS timestamptz LANGUAGE sql STABLE AS $$ SELECT ts FROM compute_sim_clock WHERE id = 1 $$';
  ELSE
    EXECUTE 'CREATE OR REPLACE FUNCTION compute_now() RETURNS timestamptz LANGUAGE sql STABLE AS $$ SELECT now() $$';
  END IF;
END
$_$;


--
-- Name: fair_share_fold(double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.fair_share_fold(half_life_seconds double precision, margin_seconds double precision) RETURNS TABLE(settled_at timestamp with time zone, rebuilt boolean)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  hl CONSTANT float8 := half_life_seconds;
  k  CONSTANT interval := make_interval(secs => 10 * half_life_seconds);
  w1 CONSTANT timestamptz := compute_now() - make_interval(secs => margin_seconds);
  w0 timestamptz;
  full_fold boolean;
  missing text[];
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('fair-share-fold:' || hl::text, 0));
  SELECT f.settled_at INTO w0 FROM fair_share_folds f WHERE f.half_life_seconds = hl;
  IF w0 IS NOT NULL AND w1 <= w0 THEN
    RETURN QUERY SELECT w0, false;
    RETURN;
  END IF;
  full_fold := w0 IS NULL OR w0 <= w1 - k;
  INSERT INTO fair_share_folds AS f (half_life_seconds, settled_at) VALUES (hl, w1)
  ON CONFLICT (half_life_seconds) DO UPDATE SET settled_at = EXCLUDED.settled_at;
  IF full_fold THEN
    DELETE FROM tenant_fair_share_settled s WHERE s.half_life_seconds = hl;
  ELSE
    WITH added AS (
      SELECT r.tenant_id, cardinality(a.device_ids) AS atoms,
             greatest(lower(r.during), a.created_at) AS s, least(a.released_at, upper(r.during)) AS e, 1 AS n
        FROM allocations a JOIN reservations r ON r.id = a.reservation_id
       WHERE a.released_at > w0 AND a.released_at <= w1
         AND least(a.released_at, upper(r.during)) > w1 - k
    ), left_window AS (
      SELECT r.tenant_id, cardinality(a.device_ids) AS atoms,
             greatest(lower(r.during), a.created_at) AS s, least(a.released_at, upper(r.during)) AS e, -1 AS n
        FROM allocations a JOIN reservations r ON r.id = a.reservation_id
       WHERE a.released_at > w0 - k AND a.released_at <= w1 - k
         AND least(a.released_at, upper(r.during)) > w0 - k
      UNION ALL
      SELECT r.tenant_id, cardinality(a.device_ids), greatest(lower(r.during), a.created_at), upper(r.during), -1
        FROM tenant_fair_share_settled t
        JOIN reservations r ON r.tenant_id = t.tenant_id
        JOIN allocations a ON a.reservation_id = r.id
       WHERE t.half_life_seconds = hl
         AND upper(r.during) > w0 - k AND upper(r.during) <= w1 - k
         AND a.released_at > w1 - k AND a.released_at <= w0
    ), delta AS (
      SELECT d.tenant_id, sum(d.n) AS n, sum(d.n * fair_share_held(d.atoms, d.s, d.e, w1, hl)) AS gpu_hours
        FROM (SELECT * FROM added UNION ALL SELECT * FROM left_window) d
       WHERE d.e > d.s
       GROUP BY d.tenant_id
    )
    UPDATE tenant_fair_share_settled t
       SET allocations = t.allocations + coalesce(d.n, 0),
           gpu_hours = CASE WHEN t.allocations + coalesce(d.n, 0) = 0 THEN 0
                            ELSE t.gpu_hours * power(2::float8, -extract(epoch FROM w1 - w0)::float8 / hl)
                                 + coalesce(d.gpu_hours, 0) END
      FROM (SELECT s.tenant_id, d.n, d.gpu_hours
              FROM tenant_fair_share_settled s LEFT JOIN delta d ON d.tenant_id = s.tenant_id
             WHERE s.half_life_seconds = hl AND (s.allocations > 0 OR d.tenant_id IS NOT NULL)) d
     WHERE t.half_life_seconds = hl AND t.tenant_id = d.tenant_id;
  END IF;
  -- In full, the tenants without a total: every tenant after the DELETE,
  -- the new ones else.
  SELECT array_agg(t.id) INTO missing FROM tenants t
   WHERE NOT EXISTS (SELECT 1 FROM tenant_fair_share_settled y WHERE y.half_life_seconds = hl AND y.tenant_id = t.id);
  IF missing IS NOT NULL THEN
    INSERT INTO tenant_fair_share_settled (half_life_seconds, tenant_id, gpu_hours, allocations)
    SELECT hl, t, coalesce(u.gpu_hours, 0), coalesce(u.n, 0)
      FROM unnest(missing) t
      LEFT JOIN (
        SELECT r.tenant_id, count(*) AS n,
               sum(fair_share_held(cardinality(a.device_ids), greatest(lower(r.during), a.created_at),
                                   least(a.released_at, upper(r.during)), w1, hl)) AS gpu_hours
          FROM reservations r JOIN allocations a ON a.reservation_id = r.id
         WHERE r.tenant_id = ANY(missing)
           AND upper(r.during) > w1 - k
           AND a.released_at <= w1 AND a.released_at > w1 - k
           AND least(a.released_at, upper(r.during)) > greatest(lower(r.during), a.created_at)
         GROUP BY r.tenant_id) u ON u.tenant_id = t;
  END IF;
  RETURN QUERY SELECT w1, full_fold;
END
$$;


--
-- Name: fair_share_held(integer, timestamp with time zone, timestamp with time zone, timestamp with time zone, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.fair_share_held(atoms integer, s timestamp with time zone, e timestamp with time zone, at timestamp with time zone, h double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT atoms * h / 3600 / ln(2) *
         (power(2::float8, -least(extract(epoch FROM at - e)::float8 / h, 1000)) -
          power(2::float8, -least(extract(epoch FROM at - s)::float8 / h, 1000)))
$$;


--
-- Name: fair_share_usage(text[], double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.fair_share_usage(tenants text[], half_life_seconds double precision) RETURNS TABLE(tenant_id text, gpu_hours double precision)
    LANGUAGE sql STABLE
    AS $$
  WITH c AS MATERIALIZED (
    SELECT compute_now() AS now, half_life_seconds AS h, make_interval(secs => 10 * half_life_seconds) AS k
  ), m AS MATERIALIZED (
    SELECT f.settled_at AS w
      FROM c JOIN fair_share_folds f ON f.half_life_seconds = c.h
     WHERE f.settled_at <= c.now AND f.settled_at > c.now - c.k
  ), settled AS MATERIALIZED (
    SELECT s.tenant_id, s.gpu_hours, s.allocations
      FROM c, m, tenant_fair_share_settled s
     WHERE s.half_life_seconds = c.h AND s.tenant_id = ANY(tenants)
  ), ids AS MATERIALIZED (
    SELECT coalesce((SELECT array_agg(s.tenant_id) FROM settled s), '{}') AS settled,
           coalesce((SELECT array_agg(DISTINCT t.t) FROM unnest(tenants) t
                      WHERE NOT EXISTS (SELECT 1 FROM settled x WHERE x.tenant_id = t.t)), '{}') AS unsettled
  ), held AS (
    -- live: the allocation of a booked or active reservation
    SELECT r.tenant_id, a.atoms, greatest(lower(r.during), a.created_at) AS s,
           least(upper(r.during), (SELECT c.now FROM c)) AS e, 'live' AS part
      FROM reservations r
     CROSS JOIN LATERAL (SELECT cardinality(x.device_ids) AS atoms, x.created_at FROM allocations x
                          WHERE x.reservation_id = r.id AND x.released_at IS NULL OFFSET 0) a
     WHERE r.tenant_id = ANY((SELECT ids.settled FROM ids)::text[]) AND r.state IN ('booked', 'active')
       AND upper(r.during) > (SELECT c.now - c.k FROM c)
    UNION ALL
    -- live: released after W
    SELECT r.tenant_id, cardinality(a.device_ids), greatest(lower(r.during), a.created_at),
           least(a.released_at, upper(r.during), (SELECT c.now FROM c)), 'live'
      FROM allocations a
     CROSS JOIN LATERAL (SELECT x.tenant_id, x.during FROM reservations x WHERE x.id = a.reservation_id OFFSET 0) r
     WHERE a.released_at > (SELECT m.w FROM m) AND a.released_at < 'infinity'::timestamptz
       AND r.tenant_id = ANY((SELECT ids.settled FROM ids)::text[])
       AND least(a.released_at, upper(r.during)) > (SELECT c.now - c.k FROM c)
    UNION ALL
    -- left the window: released in (W − 10H, now − 10H] ...
    SELECT r.tenant_id, cardinality(a.device_ids), greatest(lower(r.during), a.created_at),
           least(a.released_at, upper(r.during)), 'left'
      FROM allocations a
     CROSS JOIN LATERAL (SELECT x.tenant_id, x.during FROM reservations x WHERE x.id = a.reservation_id OFFSET 0) r
     WHERE a.released_at > (SELECT m.w - c.k FROM m, c) AND a.released_at <= (SELECT c.now - c.k FROM c)
       AND r.tenant_id = ANY((SELECT ids.settled FROM ids)::text[])
       AND least(a.released_at, upper(r.during)) > (SELECT m.w - c.k FROM m, c)
    UNION ALL
    -- ... or ended then at their reservation's end, released later (by W)
    SELECT r.tenant_id, a.atoms, greatest(lower(r.during), a.created_at), upper(r.during), 'left'
      FROM reservations r
     CROSS JOIN LATERAL (SELECT cardinality(x.device_ids) AS atoms, x.created_at FROM allocations x
                          WHERE x.reservation_id = r.id
                            AND x.released_at > (SELECT c.now - c.k FROM c) AND x.released_at <= (SELECT m.w FROM m)
                         OFFSET 0) a
     WHERE r.tenant_id = ANY((SELECT ids.settled FROM ids)::text[])
       AND upper(r.during) > (SELECT m.w - c.k FROM m, c) AND upper(r.during) <= (SELECT c.now - c.k FROM c)
    UNION ALL
    -- in full: every allocation that ended in the last ten half-lives
    SELECT r.tenant_id, a.atoms, greatest(lower(r.during), a.created_at),
           least(coalesce(a.released_at, 'infinity'::timestamptz), upper(r.during), (SELECT c.now FROM c)), 'full'
      FROM reservations r
     CROSS JOIN LATERAL (SELECT cardinality(x.device_ids) AS atoms, x.created_at, x.released_at FROM allocations x
                          WHERE x.reservation_id = r.id
                            AND coalesce(x.released_at, 'infinity'::timestamptz) > (SELECT c.now - c.k FROM c)
                         OFFSET 0) a
     WHERE r.tenant_id = ANY((SELECT ids.unsettled FROM ids)::text[])
       AND upper(r.during) > (SELECT c.now - c.k FROM c) AND upper(r.during) < 'infinity'::timestamptz
  ), used AS (
    SELECT x.tenant_id,
           sum(fair_share_held(x.atoms, x.s, x.e, c.now, c.h)) FILTER (WHERE x.part <> 'left') AS added,
           sum(fair_share_held(x.atoms, x.s, x.e, c.now, c.h)) FILTER (WHERE x.part = 'left') AS gone,
           count(*) FILTER (WHERE x.part = 'left') AS gone_n
      FROM c, held x
     WHERE x.e > x.s
     GROUP BY x.tenant_id
  )
  SELECT t.tenant_id,
         greatest(CASE WHEN s.tenant_id IS NULL OR s.allocations = coalesce(u.gone_n, 0) THEN 0
                       ELSE s.gpu_hours * power(2::float8, -extract(epoch FROM c.now - m.w)::float8 / c.h) - coalesce(u.gone, 0)
                  END + coalesce(u.added, 0), 0)::float8
    FROM c
   CROSS JOIN (SELECT DISTINCT unnest(tenants) AS tenant_id) t
    LEFT JOIN m ON true
    LEFT JOIN settled s ON s.tenant_id = t.tenant_id
    LEFT JOIN used u ON u.tenant_id = t.tenant_id
$$;


--
-- Name: fair_share_usage_full(text[], double precision, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.fair_share_usage_full(tenants text[], half_life_seconds double precision, at timestamp with time zone) RETURNS TABLE(tenant_id text, gpu_hours double precision)
    LANGUAGE sql STABLE
    AS $$
  WITH held AS (
    SELECT r.tenant_id, cardinality(a.device_ids) AS atoms,
           greatest(lower(r.during), a.created_at) AS s,
           least(coalesce(a.released_at, 'infinity'::timestamptz), upper(r.during), at) AS e
      FROM reservations r
      JOIN allocations a ON a.reservation_id = r.id
     WHERE r.tenant_id = ANY(tenants)
       AND upper(r.during) > at - make_interval(secs => 10 * half_life_seconds)
       AND coalesce(a.released_at, 'infinity'::timestamptz) > at - make_interval(secs => 10 * half_life_seconds)
  ), used AS (
    SELECT held.tenant_id, sum(fair_share_held(held.atoms, held.s, held.e, at, half_life_seconds)) AS gpu_hours
      FROM held
     WHERE held.e > held.s
     GROUP BY held.tenant_id
  )
  SELECT t.tenant_id, coalesce(u.gpu_hours, 0)::float8
    FROM (SELECT DISTINCT unnest(tenants) AS tenant_id) t
    LEFT JOIN used u ON u.tenant_id = t.tenant_id
$$;


--
-- Name: rm_rebuild_prepare(text[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rm_rebuild_prepare(tables text[]) RETURNS void
    LANGUAGE plpgsql
    AS $_$
DECLARE t text;
BEGIN
  CREATE SCHEMA IF NOT EXISTS rm_rebuild;
  FOREACH t IN ARRAY tables LOOP
    IF t !~ '^rm_[a-z_]+$' THEN
      RAISE EXCEPTION 'rm_rebuild_prepare: % is not a read-model table', t;
    END IF;
    EXECUTE format('DROP TABLE IF EXISTS rm_rebuild.%I', t);
    EXECUTE format('CREATE TABLE rm_rebuild.%I (LIKE public.%I INCLUDING ALL)', t, t);
  END LOOP;
END
$_$;


--
-- Name: rm_rebuild_swap(text[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rm_rebuild_swap(tables text[]) RETURNS void
    LANGUAGE plpgsql
    AS $_$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY tables LOOP
    IF t !~ '^rm_[a-z_]+$' THEN
      RAISE EXCEPTION 'rm_rebuild_swap: % is not a read-model table', t;
    END IF;
    EXECUTE format('DROP TABLE public.%I', t);
    EXECUTE format('ALTER TABLE rm_rebuild.%I SET SCHEMA public', t);
  END LOOP;
END
$_$;


--
-- Name: webhook_slot_acquire(uuid, text, double precision, integer, integer, text, text, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.webhook_slot_acquire(p_delivery uuid, p_endpoint text, p_hold_seconds double precision, p_max_per_tenant integer, p_max_per_endpoint integer, p_lease_name text, p_lease_owner text, p_lease_epoch bigint) RETURNS TABLE(acquired boolean, fenced boolean, open_until timestamp with time zone, tenant_slots integer, endpoint_slots integer, db_now timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
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


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: allocations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.allocations (
    id text NOT NULL,
    reservation_id text NOT NULL,
    node_id text NOT NULL,
    device_ids text[] NOT NULL,
    vcpu bigint NOT NULL,
    memory bigint NOT NULL,
    disk bigint NOT NULL,
    released_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    CONSTRAINT allocations_disk_check CHECK ((disk >= 0)),
    CONSTRAINT allocations_memory_check CHECK ((memory >= 0)),
    CONSTRAINT allocations_vcpu_check CHECK ((vcpu >= 0))
);


--
-- Name: api_tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.api_tokens (
    id text NOT NULL,
    token_hash bytea NOT NULL,
    tenant_id text NOT NULL,
    identity text NOT NULL,
    role text NOT NULL,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    revoked_at timestamp with time zone,
    expires_at timestamp with time zone,
    issued_by text,
    CONSTRAINT api_tokens_expires_after_creation CHECK ((expires_at > created_at)),
    CONSTRAINT api_tokens_identity_check CHECK ((identity <> ''::text)),
    CONSTRAINT api_tokens_role_check CHECK ((role = ANY (ARRAY['operator'::text, 'member'::text, 'viewer'::text])))
);


--
-- Name: authz_changes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.authz_changes (
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    seq bigint NOT NULL,
    token_id text NOT NULL,
    change text NOT NULL,
    "time" timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    CONSTRAINT authz_changes_change_check CHECK ((change = ANY (ARRAY['created'::text, 'revoked'::text])))
);


--
-- Name: authz_changes_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.authz_changes_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: authz_changes_seq_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.authz_changes_seq_seq OWNED BY public.authz_changes.seq;


--
-- Name: billing_deliveries; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.billing_deliveries (
    key text NOT NULL,
    allocation_id text NOT NULL,
    tenant_id text NOT NULL,
    window_start timestamp with time zone NOT NULL,
    attempts integer NOT NULL,
    last_status integer,
    last_error text DEFAULT ''::text NOT NULL,
    next_attempt_at timestamp with time zone NOT NULL,
    delivered_at timestamp with time zone,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT billing_deliveries_attempts_check CHECK ((attempts > 0))
);


--
-- Name: compute_sim_clock; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.compute_sim_clock (
    id integer NOT NULL,
    ts timestamp with time zone NOT NULL,
    CONSTRAINT compute_sim_clock_id_check CHECK ((id = 1))
);


--
-- Name: outbox; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox (
    id uuid NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    seq bigint NOT NULL,
    type text NOT NULL,
    tenant_id text,
    subject text NOT NULL,
    data jsonb NOT NULL,
    "time" timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    CONSTRAINT outbox_type_check CHECK ((type <> ''::text))
);


--
-- Name: outbox_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.outbox_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: outbox_seq_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.outbox_seq_seq OWNED BY public.outbox.seq;


--
-- Name: device_bookings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.device_bookings (
    id bigint NOT NULL,
    device_id text NOT NULL,
    allocation_id text NOT NULL,
    during tstzrange NOT NULL,
    created_seq bigint DEFAULT nextval('public.outbox_seq_seq'::regclass) NOT NULL,
    CONSTRAINT device_bookings_during_check CHECK ((NOT isempty(during)))
);


--
-- Name: device_bookings_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.device_bookings ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.device_bookings_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: devices; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.devices (
    id text NOT NULL,
    parent_id text,
    node_id text NOT NULL,
    kind text NOT NULL,
    model text NOT NULL,
    memory_mb bigint NOT NULL,
    mode text,
    profile text,
    bookable boolean NOT NULL,
    retired boolean DEFAULT false NOT NULL,
    health text DEFAULT 'healthy'::text NOT NULL,
    quarantined boolean DEFAULT false NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    mig_uuid text,
    CONSTRAINT devices_check CHECK (((kind = 'gpu'::text) = (parent_id IS NULL))),
    CONSTRAINT devices_check1 CHECK (((kind = 'gpu'::text) = (mode IS NOT NULL))),
    CONSTRAINT devices_check2 CHECK (((kind = 'gpu'::text) = (profile IS NULL))),
    CONSTRAINT devices_check3 CHECK (((kind <> 'gpu'::text) OR (bookable = (mode = 'exclusive'::text)))),
    CONSTRAINT devices_check4 CHECK (((kind <> 'gpu'::text) OR (NOT retired))),
    CONSTRAINT devices_check5 CHECK (((kind = 'gpu'::text) OR (bookable = (NOT retired)))),
    CONSTRAINT devices_check6 CHECK (((mig_uuid IS NULL) OR ((kind = 'mig'::text) AND (mig_uuid <> ''::text)))),
    CONSTRAINT devices_health_check CHECK ((health = ANY (ARRAY['healthy'::text, 'unhealthy'::text, 'missing'::text]))),
    CONSTRAINT devices_id_check CHECK ((id <> ''::text)),
    CONSTRAINT devices_kind_check CHECK ((kind = ANY (ARRAY['gpu'::text, 'mig'::text, 'slot'::text]))),
    CONSTRAINT devices_memory_mb_check CHECK ((memory_mb > 0)),
    CONSTRAINT devices_mode_check CHECK ((mode = ANY (ARRAY['exclusive'::text, 'mig'::text, 'time-slice'::text, 'mps'::text]))),
    CONSTRAINT devices_model_check CHECK ((model <> ''::text)),
    CONSTRAINT devices_version_check CHECK ((version > 0))
);


--
-- Name: fair_share_folds; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.fair_share_folds (
    half_life_seconds double precision NOT NULL,
    settled_at timestamp with time zone NOT NULL,
    CONSTRAINT fair_share_folds_half_life_seconds_check CHECK ((half_life_seconds > (0)::double precision))
);


--
-- Name: goose_db_version; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.goose_db_version (
    id integer NOT NULL,
    version_id bigint NOT NULL,
    is_applied boolean NOT NULL,
    tstamp timestamp without time zone DEFAULT now() NOT NULL
);


--
-- Name: goose_db_version_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.goose_db_version ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.goose_db_version_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: goose_lock; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.goose_lock (
    lock_id bigint NOT NULL,
    locked boolean DEFAULT false NOT NULL,
    locked_at timestamp with time zone,
    locked_by text,
    lease_expires_at timestamp with time zone,
    updated_at timestamp with time zone
);


--
-- Name: idempotency_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.idempotency_keys (
    tenant_id text NOT NULL,
    identity text NOT NULL,
    key text NOT NULL,
    request_hash bytea NOT NULL,
    response jsonb,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT idempotency_keys_key_check CHECK (((key <> ''::text) AND (length(key) <= 255)))
);


--
-- Name: instances; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.instances (
    id text NOT NULL,
    tenant_id text NOT NULL,
    reservation_id text NOT NULL,
    allocation_id text NOT NULL,
    node_id text NOT NULL,
    spec jsonb DEFAULT '{}'::jsonb NOT NULL,
    state text NOT NULL,
    reason text DEFAULT ''::text NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    updated_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    exit_code integer,
    CONSTRAINT instances_state_check CHECK ((state = ANY (ARRAY['requested'::text, 'provisioning'::text, 'running'::text, 'stopping'::text, 'stopped'::text, 'failed'::text, 'succeeded'::text]))),
    CONSTRAINT instances_version_check CHECK ((version >= 1))
);


--
-- Name: leases; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.leases (
    name text NOT NULL,
    owner text NOT NULL,
    epoch bigint NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT leases_epoch_check CHECK ((epoch > 0))
);


--
-- Name: node_commands; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.node_commands (
    id text NOT NULL,
    tenant_id text NOT NULL,
    identity text NOT NULL,
    node_id text NOT NULL,
    allocation_id text,
    idempotency_key text NOT NULL,
    kind text NOT NULL,
    retry_safe boolean NOT NULL,
    payload jsonb DEFAULT '{}'::jsonb NOT NULL,
    min_generation bigint DEFAULT 0 NOT NULL,
    state text NOT NULL,
    exit_code integer,
    output text DEFAULT ''::text NOT NULL,
    reason text DEFAULT ''::text NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    dispatched_epoch bigint,
    journal_id text,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    dispatched_at timestamp with time zone,
    finished_at timestamp with time zone,
    instance_id text,
    generation bigint,
    seq bigint NOT NULL,
    CONSTRAINT node_commands_assign_allocation CHECK (((kind <> 'assign'::text) OR (allocation_id IS NOT NULL))),
    CONSTRAINT node_commands_generation_check CHECK ((generation > 0)),
    CONSTRAINT node_commands_generation_of_assignments CHECK (((kind = ANY (ARRAY['assign'::text, 'unassign'::text])) = (generation IS NOT NULL))),
    CONSTRAINT node_commands_idempotency_key_check CHECK ((idempotency_key <> ''::text)),
    CONSTRAINT node_commands_kind_check CHECK ((kind = ANY (ARRAY['exec'::text, 'wipe'::text, 'deploy'::text, 'instance-start'::text, 'instance-stop'::text, 'assign'::text, 'unassign'::text]))),
    CONSTRAINT node_commands_min_generation_check CHECK ((min_generation >= 0)),
    CONSTRAINT node_commands_state_check CHECK ((state = ANY (ARRAY['queued'::text, 'sent'::text, 'running'::text, 'succeeded'::text, 'failed'::text, 'cancelled'::text, 'timed-out'::text]))),
    CONSTRAINT node_commands_version_check CHECK ((version >= 1))
);


--
-- Name: node_commands_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.node_commands ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.node_commands_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: node_credentials; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.node_credentials (
    id text NOT NULL,
    node_id text NOT NULL,
    token_hash bytea NOT NULL,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    revoked_at timestamp with time zone,
    grace_until timestamp with time zone,
    CONSTRAINT node_credentials_grace_revoked CHECK (((grace_until IS NULL) OR (revoked_at IS NOT NULL)))
);


--
-- Name: node_desired; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.node_desired (
    node_id text NOT NULL,
    generation bigint NOT NULL,
    updated_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    CONSTRAINT node_desired_generation_check CHECK ((generation > 0))
);


--
-- Name: node_join_tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.node_join_tokens (
    id text NOT NULL,
    node_id text NOT NULL,
    token_hash bytea NOT NULL,
    tenant_id text NOT NULL,
    identity text NOT NULL,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    used_at timestamp with time zone,
    credential_id text,
    revoked_at timestamp with time zone,
    issued_by text,
    CONSTRAINT node_join_tokens_check CHECK ((expires_at > created_at)),
    CONSTRAINT node_join_tokens_check1 CHECK (((used_at IS NULL) = (credential_id IS NULL))),
    CONSTRAINT node_join_tokens_revoked_unused CHECK (((revoked_at IS NULL) OR (used_at IS NULL)))
);


--
-- Name: node_liveness_sweeps; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.node_liveness_sweeps (
    id integer NOT NULL,
    last_sweep_at timestamp with time zone NOT NULL,
    CONSTRAINT node_liveness_sweeps_id_check CHECK ((id = 1))
);


--
-- Name: node_resources; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.node_resources (
    node_id text NOT NULL,
    resource text NOT NULL,
    allocatable bigint NOT NULL,
    ratio numeric NOT NULL,
    allocated bigint DEFAULT 0 NOT NULL,
    CONSTRAINT node_resources_allocatable_check CHECK ((allocatable >= 0)),
    CONSTRAINT node_resources_ratio_check CHECK ((ratio >= (1)::numeric)),
    CONSTRAINT node_resources_resource_check CHECK ((resource = ANY (ARRAY['vcpu'::text, 'memory'::text, 'disk'::text]))),
    CONSTRAINT node_resources_within_capacity CHECK (((allocated >= 0) AND ((allocated)::numeric <= floor(((allocatable)::numeric * ratio)))))
);


--
-- Name: node_session_credentials; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.node_session_credentials (
    node_id text NOT NULL,
    session_epoch bigint NOT NULL,
    credential_id text NOT NULL,
    CONSTRAINT node_session_credentials_session_epoch_check CHECK ((session_epoch > 0))
);


--
-- Name: node_sessions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.node_sessions (
    node_id text NOT NULL,
    session_epoch bigint DEFAULT 0 NOT NULL,
    gateway_id text,
    gateway_epoch bigint,
    journal_id text,
    connected boolean DEFAULT false NOT NULL,
    opened_at timestamp with time zone,
    last_seen_at timestamp with time zone,
    closed_at timestamp with time zone,
    close_reason text,
    disconnected_since timestamp with time zone NOT NULL,
    grace_reason text DEFAULT 'none'::text NOT NULL,
    unreachable_since timestamp with time zone,
    observed_generation bigint DEFAULT 0 NOT NULL,
    inventory_reconciled_epoch bigint,
    CONSTRAINT node_sessions_check CHECK (((NOT connected) OR ((gateway_id IS NOT NULL) AND (gateway_epoch IS NOT NULL) AND (session_epoch > 0)))),
    CONSTRAINT node_sessions_check1 CHECK (((inventory_reconciled_epoch > 0) AND (inventory_reconciled_epoch <= session_epoch))),
    CONSTRAINT node_sessions_close_reason_check CHECK ((close_reason = ANY (ARRAY['closed'::text, 'gateway-lost'::text, 'retired'::text, 'revoked'::text]))),
    CONSTRAINT node_sessions_grace_reason_check CHECK ((grace_reason = ANY (ARRAY['none'::text, 'gateway-lost'::text, 'outage'::text]))),
    CONSTRAINT node_sessions_observed_generation_check CHECK ((observed_generation >= 0)),
    CONSTRAINT node_sessions_session_epoch_check CHECK ((session_epoch >= 0))
);


--
-- Name: nodes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.nodes (
    id text NOT NULL,
    pool_id text NOT NULL,
    cordoned boolean DEFAULT false NOT NULL,
    taints text[] DEFAULT '{}'::text[] NOT NULL,
    no_schedule_reasons text[] DEFAULT '{}'::text[] NOT NULL,
    state text DEFAULT 'registered'::text NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    conditions jsonb DEFAULT '[]'::jsonb NOT NULL,
    site_id text NOT NULL,
    CONSTRAINT nodes_id_check CHECK ((id ~ '^[a-z0-9][a-z0-9.-]{0,62}$'::text)),
    CONSTRAINT nodes_state_check CHECK ((state = ANY (ARRAY['registered'::text, 'connected'::text, 'disconnected'::text, 'unreachable'::text, 'lost'::text, 'retired'::text]))),
    CONSTRAINT nodes_version_check CHECK ((version > 0))
);


--
-- Name: outbox_cursors; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_cursors (
    sink text NOT NULL,
    txid xid8 DEFAULT '0'::xid8 NOT NULL,
    seq bigint DEFAULT 0 NOT NULL,
    updated_at timestamp with time zone DEFAULT public.compute_now() NOT NULL
);


--
-- Name: outbox_pruned; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_pruned (
    singleton boolean DEFAULT true NOT NULL,
    last_at timestamp with time zone NOT NULL,
    CONSTRAINT outbox_pruned_singleton_check CHECK (singleton)
);


--
-- Name: pending_queue_positions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.pending_queue_positions (
    reservation_id text NOT NULL,
    scope text NOT NULL,
    "position" integer NOT NULL,
    queued integer NOT NULL,
    tenant_usage double precision NOT NULL,
    tenant_share integer NOT NULL,
    computed_at timestamp with time zone NOT NULL,
    CONSTRAINT pending_queue_positions_check CHECK ((queued >= "position")),
    CONSTRAINT pending_queue_positions_position_check CHECK (("position" > 0)),
    CONSTRAINT pending_queue_positions_scope_check CHECK ((scope ~ '^(pool|site):.+$'::text)),
    CONSTRAINT pending_queue_positions_tenant_share_check CHECK (((tenant_share >= 1) AND (tenant_share <= 1000000))),
    CONSTRAINT pending_queue_positions_tenant_usage_check CHECK ((tenant_usage >= (0)::double precision))
);


--
-- Name: pool_capacity_rollup; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.pool_capacity_rollup (
    pool_id text NOT NULL,
    resource text NOT NULL,
    capacity bigint DEFAULT 0 NOT NULL,
    allocated bigint DEFAULT 0 NOT NULL,
    CONSTRAINT pool_capacity_rollup_capacity_check CHECK ((capacity >= 0)),
    CONSTRAINT pool_capacity_rollup_resource_check CHECK ((resource = ANY (ARRAY['vcpu'::text, 'memory'::text, 'disk'::text]))),
    CONSTRAINT pool_capacity_rollup_within_capacity CHECK (((allocated >= 0) AND (allocated <= capacity)))
);


--
-- Name: pools; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.pools (
    id text NOT NULL,
    site_id text NOT NULL,
    kind text NOT NULL,
    lost_after_seconds integer,
    cpu_ratio numeric DEFAULT 1 NOT NULL,
    memory_ratio numeric DEFAULT 1 NOT NULL,
    disk_ratio numeric DEFAULT 1 NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    workload_network text DEFAULT 'none'::text NOT NULL,
    CONSTRAINT pools_check CHECK (((kind <> 'bare-metal'::text) OR (lost_after_seconds IS NULL))),
    CONSTRAINT pools_cpu_ratio_check CHECK (((cpu_ratio >= (1)::numeric) AND (cpu_ratio <= (64)::numeric))),
    CONSTRAINT pools_disk_ratio_check CHECK (((disk_ratio >= (1)::numeric) AND (disk_ratio <= (64)::numeric))),
    CONSTRAINT pools_id_check CHECK ((id ~ '^[a-z0-9][a-z0-9-]{0,62}$'::text)),
    CONSTRAINT pools_kind_check CHECK ((kind = ANY (ARRAY['bare-metal'::text, 'provider'::text, 'vps-host'::text]))),
    CONSTRAINT pools_lost_after_seconds_check CHECK ((lost_after_seconds > 0)),
    CONSTRAINT pools_memory_ratio_check CHECK (((memory_ratio >= (1)::numeric) AND (memory_ratio <= (64)::numeric))),
    CONSTRAINT pools_version_check CHECK ((version > 0)),
    CONSTRAINT pools_workload_network_check CHECK ((workload_network = ANY (ARRAY['none'::text, 'bridge'::text, 'host'::text])))
);


--
-- Name: priority_classes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.priority_classes (
    name text NOT NULL,
    value integer NOT NULL,
    preemptible boolean NOT NULL,
    grace_seconds integer DEFAULT 30 NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    is_default boolean DEFAULT false NOT NULL,
    created_by text NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    CONSTRAINT priority_classes_created_by_check CHECK ((created_by <> ''::text)),
    CONSTRAINT priority_classes_description_check CHECK ((length(description) <= 1024)),
    CONSTRAINT priority_classes_grace_seconds_check CHECK (((grace_seconds >= 0) AND (grace_seconds <= 86400))),
    CONSTRAINT priority_classes_name_check CHECK ((name ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'::text)),
    CONSTRAINT priority_classes_value_check CHECK (((value >= '-1000000000'::integer) AND (value <= 1000000000))),
    CONSTRAINT priority_classes_version_check CHECK ((version > 0))
);


--
-- Name: quota_usage; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.quota_usage (
    tenant_id text NOT NULL,
    resource text NOT NULL,
    used bigint DEFAULT 0 NOT NULL,
    max bigint NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    CONSTRAINT quota_usage_max_check CHECK ((max >= 0)),
    CONSTRAINT quota_usage_resource_check CHECK ((resource ~ '^(gpu|gpu:[A-Za-z0-9._-]+|vcpu|memory|disk)$'::text)),
    CONSTRAINT quota_usage_version_check CHECK ((version > 0)),
    CONSTRAINT quota_usage_within_max CHECK (((used >= 0) AND (used <= max)))
);


--
-- Name: reservation_preemptions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.reservation_preemptions (
    victim_id text NOT NULL,
    preemptor_id text NOT NULL,
    victim_priority integer NOT NULL,
    preemptor_priority integer NOT NULL,
    grace_seconds integer NOT NULL,
    preempted_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    CONSTRAINT reservation_preemptions_grace_seconds_check CHECK (((grace_seconds >= 0) AND (grace_seconds <= 86400))),
    CONSTRAINT reservation_preemptions_strictly_higher CHECK ((preemptor_priority > victim_priority))
);


--
-- Name: reservations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.reservations (
    id text NOT NULL,
    tenant_id text NOT NULL,
    created_by text NOT NULL,
    state text NOT NULL,
    pool_id text,
    site_id text,
    spec jsonb NOT NULL,
    during tstzrange NOT NULL,
    charges jsonb DEFAULT '{}'::jsonb NOT NULL,
    conditions jsonb DEFAULT '[]'::jsonb NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    updated_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    priority_class text NOT NULL,
    priority integer NOT NULL,
    preemptible boolean NOT NULL,
    legacy_end timestamp with time zone,
    created_txid xid8 DEFAULT pg_current_xact_id(),
    CONSTRAINT reservations_check CHECK (((pool_id IS NULL) <> (site_id IS NULL))),
    CONSTRAINT reservations_during_check CHECK (((NOT isempty(during)) AND (NOT lower_inf(during)) AND (NOT upper_inf(during)))),
    CONSTRAINT reservations_max_length CHECK ((((upper(during) - lower(during)) <= '366 days'::interval) OR COALESCE((upper(during) <= legacy_end), false))),
    CONSTRAINT reservations_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'booked'::text, 'active'::text, 'released'::text, 'expired'::text, 'cancelled'::text, 'failed'::text, 'preempted'::text]))),
    CONSTRAINT reservations_version_check CHECK ((version > 0))
);


--
-- Name: rm_device_holders; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rm_device_holders (
    device_id text NOT NULL,
    reservation_id text NOT NULL,
    tenant_id text NOT NULL,
    node_id text NOT NULL,
    during tstzrange NOT NULL,
    version bigint NOT NULL,
    updated_txid xid8 NOT NULL,
    updated_seq bigint NOT NULL,
    CONSTRAINT rm_device_holders_version_check CHECK ((version > 0))
);


--
-- Name: rm_fleet_allocations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rm_fleet_allocations (
    reservation_id text NOT NULL,
    tenant_id text NOT NULL,
    node_id text NOT NULL,
    pool_id text NOT NULL,
    device_ids text[] NOT NULL,
    vcpu bigint NOT NULL,
    memory_mb bigint NOT NULL,
    disk_gb bigint NOT NULL,
    live boolean NOT NULL,
    version bigint NOT NULL,
    CONSTRAINT rm_fleet_allocations_version_check CHECK ((version > 0))
);


--
-- Name: rm_fleet_devices; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rm_fleet_devices (
    id text NOT NULL,
    node_id text NOT NULL,
    pool_id text NOT NULL,
    parent_id text,
    kind text NOT NULL,
    model text NOT NULL,
    mode text,
    profile text,
    retired boolean DEFAULT false NOT NULL,
    health text DEFAULT 'healthy'::text NOT NULL,
    quarantined boolean DEFAULT false NOT NULL,
    version bigint NOT NULL,
    mode_version bigint DEFAULT 0 NOT NULL,
    status_version bigint DEFAULT 0 NOT NULL
);


--
-- Name: rm_fleet_nodes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rm_fleet_nodes (
    id text NOT NULL,
    pool_id text NOT NULL,
    cordoned boolean NOT NULL,
    taints text[] DEFAULT '{}'::text[] NOT NULL,
    vcpu bigint NOT NULL,
    memory_mb bigint NOT NULL,
    disk_gb bigint NOT NULL,
    version bigint NOT NULL,
    registered_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    updated_txid xid8 NOT NULL,
    updated_seq bigint NOT NULL,
    state text DEFAULT 'registered'::text NOT NULL,
    no_schedule_reasons text[] DEFAULT '{}'::text[] NOT NULL,
    conditions jsonb DEFAULT '[]'::jsonb NOT NULL,
    scheduling_version bigint DEFAULT 0 NOT NULL,
    state_version bigint DEFAULT 0 NOT NULL,
    reasons_version bigint DEFAULT 0 NOT NULL,
    conditions_version bigint DEFAULT 0 NOT NULL,
    CONSTRAINT rm_fleet_nodes_version_check CHECK ((version > 0))
);


--
-- Name: rm_fleet_pools; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rm_fleet_pools (
    id text NOT NULL,
    site_id text NOT NULL,
    kind text NOT NULL,
    cpu_ratio numeric NOT NULL,
    memory_ratio numeric NOT NULL,
    disk_ratio numeric NOT NULL,
    version bigint NOT NULL,
    workload_network text DEFAULT 'none'::text NOT NULL,
    CONSTRAINT rm_fleet_pools_version_check CHECK ((version > 0))
);


--
-- Name: rm_reservations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rm_reservations (
    id text NOT NULL,
    tenant_id text NOT NULL,
    state text NOT NULL,
    pool_id text,
    site_id text,
    node_id text,
    device_ids text[] DEFAULT '{}'::text[] NOT NULL,
    start_ts timestamp with time zone NOT NULL,
    end_ts timestamp with time zone NOT NULL,
    tolerations text[] DEFAULT '{}'::text[] NOT NULL,
    conditions jsonb DEFAULT '[]'::jsonb NOT NULL,
    version bigint NOT NULL,
    created_txid xid8 NOT NULL,
    created_seq bigint NOT NULL,
    updated_txid xid8 NOT NULL,
    updated_seq bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    priority_class text DEFAULT 'standard'::text NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    preemptible boolean DEFAULT false NOT NULL,
    spec jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT rm_reservations_version_check CHECK ((version > 0))
);


--
-- Name: rm_usage_allocations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rm_usage_allocations (
    reservation_id text NOT NULL,
    allocation_id text NOT NULL,
    tenant_id text NOT NULL,
    pool_id text NOT NULL,
    node_id text NOT NULL,
    devices integer NOT NULL,
    vcpu bigint NOT NULL,
    memory_mb bigint NOT NULL,
    disk_gb bigint NOT NULL,
    start_ts timestamp with time zone NOT NULL,
    end_ts timestamp with time zone NOT NULL,
    final boolean NOT NULL,
    version bigint NOT NULL,
    gpu_kind text DEFAULT ''::text NOT NULL,
    gpu_model text DEFAULT ''::text NOT NULL,
    mig_profile text DEFAULT ''::text NOT NULL,
    slot_kind text DEFAULT ''::text NOT NULL,
    CONSTRAINT rm_usage_allocations_version_check CHECK ((version > 0))
);


--
-- Name: rm_usage_windows; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rm_usage_windows (
    key text NOT NULL,
    allocation_id text NOT NULL,
    reservation_id text NOT NULL,
    tenant_id text NOT NULL,
    pool_id text NOT NULL,
    node_id text NOT NULL,
    window_start timestamp with time zone NOT NULL,
    window_end timestamp with time zone NOT NULL,
    reserved_ms bigint NOT NULL,
    devices integer NOT NULL,
    device_ms bigint NOT NULL,
    vcpu bigint NOT NULL,
    memory_mb bigint NOT NULL,
    disk_gb bigint NOT NULL,
    final boolean NOT NULL,
    gpu_kind text DEFAULT ''::text NOT NULL,
    gpu_model text DEFAULT ''::text NOT NULL,
    mig_profile text DEFAULT ''::text NOT NULL,
    slot_kind text DEFAULT ''::text NOT NULL,
    CONSTRAINT rm_usage_windows_reserved_ms_check CHECK ((reserved_ms > 0))
);


--
-- Name: sites; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.sites (
    id text NOT NULL,
    name text NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    CONSTRAINT sites_id_check CHECK ((id ~ '^[a-z0-9][a-z0-9-]{0,62}$'::text)),
    CONSTRAINT sites_name_check CHECK ((name <> ''::text)),
    CONSTRAINT sites_version_check CHECK ((version > 0))
);


--
-- Name: stream_tickets; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.stream_tickets (
    ticket_hash bytea NOT NULL,
    token_id text NOT NULL,
    tenant_id text NOT NULL,
    identity text NOT NULL,
    role text NOT NULL,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT stream_tickets_check CHECK (((expires_at > created_at) AND (expires_at <= (created_at + '00:01:00'::interval)))),
    CONSTRAINT stream_tickets_identity_check CHECK ((identity <> ''::text)),
    CONSTRAINT stream_tickets_role_check CHECK ((role = ANY (ARRAY['operator'::text, 'member'::text, 'viewer'::text])))
);


--
-- Name: tenant_fair_share_settled; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tenant_fair_share_settled (
    half_life_seconds double precision NOT NULL,
    tenant_id text NOT NULL,
    gpu_hours double precision NOT NULL,
    allocations bigint NOT NULL,
    CONSTRAINT tenant_fair_share_settled_allocations_check CHECK ((allocations >= 0))
);


--
-- Name: tenant_fair_shares; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tenant_fair_shares (
    tenant_id text NOT NULL,
    share integer NOT NULL,
    version bigint NOT NULL,
    updated_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    CONSTRAINT tenant_fair_shares_share_check CHECK (((share >= 1) AND (share <= 1000000))),
    CONSTRAINT tenant_fair_shares_version_check CHECK ((version > 0))
);


--
-- Name: tenant_priority_class_sets; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tenant_priority_class_sets (
    tenant_id text NOT NULL,
    version bigint NOT NULL,
    updated_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    CONSTRAINT tenant_priority_class_sets_version_check CHECK ((version > 0))
);


--
-- Name: tenant_priority_classes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tenant_priority_classes (
    tenant_id text NOT NULL,
    class text NOT NULL
);


--
-- Name: tenants; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tenants (
    id text NOT NULL,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    CONSTRAINT tenants_id_check CHECK ((id ~ '^[a-z0-9][a-z0-9-]{0,62}$'::text))
);


--
-- Name: webhook_attempts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_attempts (
    id bigint NOT NULL,
    delivery_id uuid NOT NULL,
    endpoint_id text NOT NULL,
    event_id uuid NOT NULL,
    attempt integer NOT NULL,
    status integer,
    latency_ms integer NOT NULL,
    response_snippet text DEFAULT ''::text NOT NULL,
    error text,
    at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    CONSTRAINT webhook_attempts_attempt_check CHECK ((attempt >= 1)),
    CONSTRAINT webhook_attempts_latency_ms_check CHECK ((latency_ms >= 0)),
    CONSTRAINT webhook_attempts_response_snippet_check CHECK ((octet_length(response_snippet) <= 1024))
);


--
-- Name: webhook_attempts_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.webhook_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: webhook_attempts_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.webhook_attempts_id_seq OWNED BY public.webhook_attempts.id;


--
-- Name: webhook_deliveries; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_deliveries (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    endpoint_id text NOT NULL,
    event_id uuid NOT NULL,
    state text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    last_status integer,
    last_error text,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    updated_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    CONSTRAINT webhook_deliveries_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT webhook_deliveries_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'succeeded'::text, 'failed'::text, 'abandoned'::text])))
);


--
-- Name: webhook_endpoints; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_endpoints (
    id text NOT NULL,
    tenant_id text NOT NULL,
    url text NOT NULL,
    event_types text[] DEFAULT '{}'::text[] NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    secret text NOT NULL,
    previous_secret text,
    previous_secret_until timestamp with time zone,
    enabled boolean DEFAULT true NOT NULL,
    disabled_reason text,
    failing_since timestamp with time zone,
    version bigint DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    updated_at timestamp with time zone DEFAULT public.compute_now() NOT NULL,
    consecutive_failures integer DEFAULT 0 NOT NULL,
    breaker_trips integer DEFAULT 0 NOT NULL,
    breaker_open_until timestamp with time zone,
    last_recover_at timestamp with time zone,
    created_txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    CONSTRAINT webhook_endpoints_breaker_trips_check CHECK ((breaker_trips >= 0)),
    CONSTRAINT webhook_endpoints_check CHECK ((enabled OR (disabled_reason IS NOT NULL))),
    CONSTRAINT webhook_endpoints_consecutive_failures_check CHECK ((consecutive_failures >= 0)),
    CONSTRAINT webhook_endpoints_secret_check CHECK ((secret ~~ 'whsec\_%'::text)),
    CONSTRAINT webhook_endpoints_url_check CHECK ((url ~ '^https?://'::text))
);


--
-- Name: webhook_inflight; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_inflight (
    delivery_id uuid NOT NULL,
    endpoint_id text NOT NULL,
    tenant_id text NOT NULL,
    until timestamp with time zone NOT NULL
);


--
-- Name: work_queue; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.work_queue (
    kind text NOT NULL,
    key text NOT NULL,
    shard integer NOT NULL,
    gen bigint DEFAULT 1 NOT NULL,
    not_before timestamp with time zone NOT NULL,
    claimed_until timestamp with time zone,
    claimed_by text,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    CONSTRAINT work_queue_shard_check CHECK ((shard >= 0))
);


--
-- Name: authz_changes seq; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.authz_changes ALTER COLUMN seq SET DEFAULT nextval('public.authz_changes_seq_seq'::regclass);


--
-- Name: outbox seq; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox ALTER COLUMN seq SET DEFAULT nextval('public.outbox_seq_seq'::regclass);


--
-- Name: webhook_attempts id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_attempts ALTER COLUMN id SET DEFAULT nextval('public.webhook_attempts_id_seq'::regclass);


--
-- Data for Name: allocations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.allocations VALUES ('alc_01a24e7b-eaef-7f3c-8d35-04821d222302', 'rsv_01a24e7b-eab2-700c-bd50-30e24ff97714', 'demo-node-1', '{GPU-demo-node-1-6,GPU-demo-node-1-7}', 4, 8192, 10, NULL, '2026-12-07 03:11:13.60973+00');
INSERT INTO public.allocations VALUES ('alc_01a24e7b-f605-768f-ab4e-e96ddf052f70', 'rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1', 'demo-node-1', '{GPU-demo-node-1-0}', 0, 0, 0, NULL, '2026-12-07 03:11:16.426023+00');
INSERT INTO public.allocations VALUES ('alc_01a24e7c-019e-73b4-ada2-608d17aaa34a', 'rsv_01a24e7c-017e-7347-a620-28413c3db9d4', 'demo-node-1', '{GPU-demo-node-1-2}', 0, 0, 0, '2026-12-07 03:11:31.307186+00', '2026-12-07 03:11:19.426005+00');
INSERT INTO public.allocations VALUES ('alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73', 'rsv_01a24e7c-3a3a-760b-a030-d9839d315bdf', 'demo-node-3', '{GPU-demo-node-3-0/s1}', 0, 0, 0, NULL, '2026-12-07 03:11:34.035509+00');
INSERT INTO public.allocations VALUES ('alc_01a24e7c-494f-7952-8d7d-57152f604d4e', 'rsv_01a24e7c-4935-75ca-90fb-54a7efd68c5c', 'demo-node-2', '{GPU-demo-node-2-1/mig-2}', 0, 0, 0, NULL, '2026-12-07 03:11:37.784432+00');


--
-- Data for Name: api_tokens; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.api_tokens VALUES ('tok_8714db09c0308b1bb858758b', '\xbe9f9f74256e1896e8bd56d926cb2161aa1e025f00d73866a1efc6410af1a2f5', 'ops', 'demo-operator', 'operator', '2026-12-07 03:10:58.757907+00', NULL, NULL, NULL);
INSERT INTO public.api_tokens VALUES ('tok_d2028287cb2c074846578187', '\xdf2f5306802c90aaffd119ec4bf9bc0ba8a02f38dc5abb22e27527473d90a384', 'acme', 'demo-user', 'member', '2026-12-07 03:10:58.786283+00', NULL, NULL, NULL);
INSERT INTO public.api_tokens VALUES ('tok_1f05b2b57b89e15e4c645156', '\xeb2bd704ea8362c5f05cd402ca1868385497ad72db238568705fcb07d426a617', 'ops', 'bob', 'operator', '2026-12-07 03:11:01.649906+00', NULL, NULL, 'tok_8714db09c0308b1bb858758b');
INSERT INTO public.api_tokens VALUES ('tok_9311e0bc91498d3f3c1e70e2', '\x062d2743d910c01568ef8c36499e5ac56294711e74382edf4a176810cfdfaaff', 'acme', 'carol', 'member', '2026-12-07 03:11:05.207096+00', NULL, NULL, 'tok_1f05b2b57b89e15e4c645156');
INSERT INTO public.api_tokens VALUES ('tok_7181042636caa1d1f57b5c0f', '\x2676e7da89e9f87fbc87402f1d4782969bfb2d5db63c3b085d2ee118c8c99695', 'acme', 'dave', 'viewer', '2026-12-07 03:11:40.731153+00', NULL, '2027-12-07 03:11:40.711313+00', 'tok_1f05b2b57b89e15e4c645156');


--
-- Data for Name: authz_changes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.authz_changes VALUES ('1631', 1, 'tok_8714db09c0308b1bb858758b', 'created', '2026-12-07 03:10:58.757907+00');
INSERT INTO public.authz_changes VALUES ('1632', 2, 'tok_d2028287cb2c074846578187', 'created', '2026-12-07 03:10:58.786283+00');
INSERT INTO public.authz_changes VALUES ('1705', 3, 'tok_1f05b2b57b89e15e4c645156', 'created', '2026-12-07 03:11:01.649906+00');
INSERT INTO public.authz_changes VALUES ('1724', 4, 'tok_9311e0bc91498d3f3c1e70e2', 'created', '2026-12-07 03:11:05.207096+00');
INSERT INTO public.authz_changes VALUES ('2065', 5, 'tok_7181042636caa1d1f57b5c0f', 'created', '2026-12-07 03:11:40.731153+00');


--
-- Data for Name: billing_deliveries; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: compute_sim_clock; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: device_bookings; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.device_bookings OVERRIDING SYSTEM VALUE VALUES (1, 'GPU-demo-node-1-6', 'alc_01a24e7b-eaef-7f3c-8d35-04821d222302', '["2026-12-07 03:11:13.60973+00","2026-12-08 03:11:00+00")', 33);
INSERT INTO public.device_bookings OVERRIDING SYSTEM VALUE VALUES (2, 'GPU-demo-node-1-7', 'alc_01a24e7b-eaef-7f3c-8d35-04821d222302', '["2026-12-07 03:11:13.60973+00","2026-12-08 03:11:00+00")', 34);
INSERT INTO public.device_bookings OVERRIDING SYSTEM VALUE VALUES (3, 'GPU-demo-node-1-0', 'alc_01a24e7b-f605-768f-ab4e-e96ddf052f70', '["2026-12-09 03:11:00+00","2026-12-09 04:11:00+00")', 41);
INSERT INTO public.device_bookings OVERRIDING SYSTEM VALUE VALUES (4, 'GPU-demo-node-1-2', 'alc_01a24e7c-019e-73b4-ada2-608d17aaa34a', '["2026-12-07 03:11:19.426005+00","2026-12-07 03:11:31.307186+00")', 43);
INSERT INTO public.device_bookings OVERRIDING SYSTEM VALUE VALUES (5, 'GPU-demo-node-3-0/s1', 'alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73', '["2026-12-07 03:11:34.035509+00","2026-12-08 03:11:00+00")', 63);
INSERT INTO public.device_bookings OVERRIDING SYSTEM VALUE VALUES (6, 'GPU-demo-node-2-1/mig-2', 'alc_01a24e7c-494f-7952-8d7d-57152f604d4e', '["2026-12-07 03:11:37.784432+00","2026-12-08 03:11:00+00")', 70);
INSERT INTO public.device_bookings OVERRIDING SYSTEM VALUE VALUES (7, 'GPU-demo-node-1-0', 'alc_01a24e7b-f605-768f-ab4e-e96ddf052f70', '["2026-12-09 04:11:00+00","2026-12-09 05:11:00+00")', 84);


--
-- Data for Name: devices; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.devices VALUES ('GPU-demo-node-1-0', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-07 03:10:58.357563+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-1-1', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-07 03:10:58.357563+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-1-2', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-07 03:10:58.357563+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-1-3', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-07 03:10:58.357563+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-1-4', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-07 03:10:58.357563+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-1-5', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-07 03:10:58.357563+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-1-6', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-07 03:10:58.357563+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-1-7', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-07 03:10:58.357563+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-0', NULL, 'demo-node-2', 'gpu', 'A100-80GB', 81920, 'mig', NULL, false, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-0/mig-0', 'GPU-demo-node-2-0', 'demo-node-2', 'mig', 'A100-80GB', 40960, NULL, '3g.40gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-0/mig-1', 'GPU-demo-node-2-0', 'demo-node-2', 'mig', 'A100-80GB', 20480, NULL, '2g.20gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-0/mig-2', 'GPU-demo-node-2-0', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-0/mig-3', 'GPU-demo-node-2-0', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-1', NULL, 'demo-node-2', 'gpu', 'A100-80GB', 81920, 'mig', NULL, false, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-1/mig-0', 'GPU-demo-node-2-1', 'demo-node-2', 'mig', 'A100-80GB', 40960, NULL, '3g.40gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-1/mig-1', 'GPU-demo-node-2-1', 'demo-node-2', 'mig', 'A100-80GB', 20480, NULL, '2g.20gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-1/mig-2', 'GPU-demo-node-2-1', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-1/mig-3', 'GPU-demo-node-2-1', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-2', NULL, 'demo-node-2', 'gpu', 'A100-80GB', 81920, 'mig', NULL, false, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-2/mig-0', 'GPU-demo-node-2-2', 'demo-node-2', 'mig', 'A100-80GB', 40960, NULL, '3g.40gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-2/mig-1', 'GPU-demo-node-2-2', 'demo-node-2', 'mig', 'A100-80GB', 20480, NULL, '2g.20gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-2/mig-2', 'GPU-demo-node-2-2', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-2/mig-3', 'GPU-demo-node-2-2', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-3', NULL, 'demo-node-2', 'gpu', 'A100-80GB', 81920, 'mig', NULL, false, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-3/mig-0', 'GPU-demo-node-2-3', 'demo-node-2', 'mig', 'A100-80GB', 40960, NULL, '3g.40gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-3/mig-1', 'GPU-demo-node-2-3', 'demo-node-2', 'mig', 'A100-80GB', 20480, NULL, '2g.20gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-3/mig-2', 'GPU-demo-node-2-3', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-3/mig-3', 'GPU-demo-node-2-3', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.537047+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-0', NULL, 'demo-node-3', 'gpu', 'L4-24GB', 24576, 'time-slice', NULL, false, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-0/s0', 'GPU-demo-node-3-0', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-0/s1', 'GPU-demo-node-3-0', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-0/s2', 'GPU-demo-node-3-0', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-0/s3', 'GPU-demo-node-3-0', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-1', NULL, 'demo-node-3', 'gpu', 'L4-24GB', 24576, 'time-slice', NULL, false, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-1/s0', 'GPU-demo-node-3-1', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-1/s1', 'GPU-demo-node-3-1', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-1/s2', 'GPU-demo-node-3-1', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-1/s3', 'GPU-demo-node-3-1', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-2', NULL, 'demo-node-3', 'gpu', 'L4-24GB', 24576, 'time-slice', NULL, false, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-2/s0', 'GPU-demo-node-3-2', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-2/s1', 'GPU-demo-node-3-2', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-2/s2', 'GPU-demo-node-3-2', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-2/s3', 'GPU-demo-node-3-2', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-3', NULL, 'demo-node-3', 'gpu', 'L4-24GB', 24576, 'time-slice', NULL, false, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-3/s0', 'GPU-demo-node-3-3', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-3/s1', 'GPU-demo-node-3-3', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-3/s2', 'GPU-demo-node-3-3', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-3/s3', 'GPU-demo-node-3-3', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-07 03:10:58.627465+00', NULL);


--
-- Data for Name: fair_share_folds; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fair_share_folds VALUES (604800, '2026-12-07 03:00:59.177504+00');


--
-- Data for Name: goose_db_version; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.goose_db_version VALUES (1, 0, true, '2026-12-07 03:10:54.499495');
INSERT INTO public.goose_db_version VALUES (2, 1, true, '2026-12-07 03:10:55.014382');
INSERT INTO public.goose_db_version VALUES (3, 2, true, '2026-12-07 03:10:55.482035');
INSERT INTO public.goose_db_version VALUES (4, 3, true, '2026-12-07 03:10:55.504842');
INSERT INTO public.goose_db_version VALUES (5, 4, true, '2026-12-07 03:10:55.532214');
INSERT INTO public.goose_db_version VALUES (6, 5, true, '2026-12-07 03:10:55.578557');
INSERT INTO public.goose_db_version VALUES (7, 6, true, '2026-12-07 03:10:55.693907');
INSERT INTO public.goose_db_version VALUES (8, 7, true, '2026-12-07 03:10:55.961499');
INSERT INTO public.goose_db_version VALUES (9, 10, true, '2026-12-07 03:10:56.257442');
INSERT INTO public.goose_db_version VALUES (10, 11, true, '2026-12-07 03:10:56.294803');
INSERT INTO public.goose_db_version VALUES (11, 12, true, '2026-12-07 03:10:56.469648');
INSERT INTO public.goose_db_version VALUES (12, 13, true, '2026-12-07 03:10:56.478174');
INSERT INTO public.goose_db_version VALUES (13, 14, true, '2026-12-07 03:10:56.780237');
INSERT INTO public.goose_db_version VALUES (14, 15, true, '2026-12-07 03:10:56.896113');
INSERT INTO public.goose_db_version VALUES (15, 16, true, '2026-12-07 03:10:56.968596');
INSERT INTO public.goose_db_version VALUES (16, 17, true, '2026-12-07 03:10:57.013318');
INSERT INTO public.goose_db_version VALUES (17, 18, true, '2026-12-07 03:10:57.080672');
INSERT INTO public.goose_db_version VALUES (18, 19, true, '2026-12-07 03:10:57.151811');
INSERT INTO public.goose_db_version VALUES (19, 20, true, '2026-12-07 03:10:57.18177');
INSERT INTO public.goose_db_version VALUES (20, 21, true, '2026-12-07 03:10:57.34357');
INSERT INTO public.goose_db_version VALUES (21, 22, true, '2026-12-07 03:10:57.404752');
INSERT INTO public.goose_db_version VALUES (22, 23, true, '2026-12-07 03:10:57.436372');
INSERT INTO public.goose_db_version VALUES (23, 24, true, '2026-12-07 03:10:57.494802');
INSERT INTO public.goose_db_version VALUES (24, 25, true, '2026-12-07 03:10:57.508037');
INSERT INTO public.goose_db_version VALUES (25, 26, true, '2026-12-07 03:10:57.514895');
INSERT INTO public.goose_db_version VALUES (26, 27, true, '2026-12-07 03:10:57.608801');
INSERT INTO public.goose_db_version VALUES (27, 28, true, '2026-12-07 03:10:57.618356');
INSERT INTO public.goose_db_version VALUES (28, 29, true, '2026-12-07 03:10:57.668178');
INSERT INTO public.goose_db_version VALUES (29, 30, true, '2026-12-07 03:10:57.708928');
INSERT INTO public.goose_db_version VALUES (30, 31, true, '2026-12-07 03:10:57.716419');
INSERT INTO public.goose_db_version VALUES (31, 32, true, '2026-12-07 03:10:57.725661');
INSERT INTO public.goose_db_version VALUES (32, 33, true, '2026-12-07 03:10:57.804256');
INSERT INTO public.goose_db_version VALUES (33, 34, true, '2026-12-07 03:10:57.963455');
INSERT INTO public.goose_db_version VALUES (34, 35, true, '2026-12-07 03:10:58.040373');
INSERT INTO public.goose_db_version VALUES (35, 36, true, '2026-12-07 03:10:58.052456');
INSERT INTO public.goose_db_version VALUES (36, 37, true, '2026-12-07 03:10:58.060323');
INSERT INTO public.goose_db_version VALUES (37, 38, true, '2026-12-07 03:10:58.068736');
INSERT INTO public.goose_db_version VALUES (38, 39, true, '2026-12-07 03:10:58.07544');
INSERT INTO public.goose_db_version VALUES (39, 40, true, '2026-12-07 03:10:58.080338');
INSERT INTO public.goose_db_version VALUES (40, 41, true, '2026-12-07 03:10:58.113431');
INSERT INTO public.goose_db_version VALUES (41, 42, true, '2026-12-07 03:10:58.115759');
INSERT INTO public.goose_db_version VALUES (42, 43, true, '2026-12-07 03:10:58.142024');
INSERT INTO public.goose_db_version VALUES (43, 44, true, '2026-12-07 03:10:58.160288');
INSERT INTO public.goose_db_version VALUES (44, 45, true, '2026-12-07 03:10:58.169614');
INSERT INTO public.goose_db_version VALUES (45, 46, true, '2026-12-07 03:10:58.172394');
INSERT INTO public.goose_db_version VALUES (46, 47, true, '2026-12-07 03:10:58.181003');
INSERT INTO public.goose_db_version VALUES (47, 48, true, '2026-12-07 03:10:58.19173');
INSERT INTO public.goose_db_version VALUES (48, 49, true, '2026-12-07 03:10:58.196105');
INSERT INTO public.goose_db_version VALUES (49, 51, true, '2026-12-07 03:10:58.200982');
INSERT INTO public.goose_db_version VALUES (50, 52, true, '2026-12-07 03:10:58.219517');
INSERT INTO public.goose_db_version VALUES (51, 53, true, '2026-12-07 03:10:58.277782');
INSERT INTO public.goose_db_version VALUES (52, 54, true, '2026-12-07 03:10:58.291424');
INSERT INTO public.goose_db_version VALUES (53, 55, true, '2026-12-07 03:10:58.310371');
INSERT INTO public.goose_db_version VALUES (54, 56, true, '2026-12-07 03:10:58.316448');


--
-- Data for Name: goose_lock; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.goose_lock VALUES (4097083626, false, NULL, NULL, NULL, '2026-12-07 03:10:58.337815+00');


--
-- Data for Name: idempotency_keys; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'cli-ba8e8147bff76bab816dff2b', '\xd2aab9b3b5f9acf5588e87e5e60c68c659a18f63302888a30a996e93006b251f', '{"result": {"Secret": "whsec_+54qx5WwMw0JBhS2hbjurCqltSJC9yrjaE9ZECKk0Bs=", "Endpoint": {"ID": "we_8c0ce326ff5eab5341c307a6", "URL": "http://127.0.0.1:18132/hook", "Tenant": "acme", "Enabled": true, "Version": 1, "CreatedAt": "2026-12-07T03:11:08.688212Z", "UpdatedAt": "2026-12-07T03:11:08.688212Z", "EventTypes": [], "Description": "upgrade", "FailingSince": null, "DisabledReason": "", "BreakerOpenUntil": null, "ConsecutiveFailures": 0}, "Position": {"Seq": 32, "TxID": 1729}}}', '2026-12-07 03:11:08.688212+00', '2026-12-08 03:11:08.688212+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'upg-active-1', '\xb06efcf898950cb0ea39bce46dc13408c0c4be985e3d34b6c9bd6f44568b842e', '{"result": {"position": {"Seq": 35, "TxID": 1764}, "reservation": {"id": "rsv_01a24e7b-eab2-700c-bd50-30e24ff97714", "end": "2026-12-08T03:11:00Z", "spec": {"gpu": {"kind": "gpu", "count": 2, "model": "H100-80GB"}, "vcpu": 4, "diskGb": 10, "memoryMb": 8192, "tolerations": []}, "start": "2026-12-07T03:11:13.60973Z", "state": "booked", "nodeId": "demo-node-1", "poolId": "demo-pool", "tenant": "acme", "charges": {"gpu": 2, "disk": 10, "vcpu": 4, "memory": 8192}, "version": 1, "priority": 0, "deviceIds": ["GPU-demo-node-1-6", "GPU-demo-node-1-7"], "conditions": [], "preemptible": false, "priorityClass": "standard"}}}', '2026-12-07 03:11:13.60973+00', '2026-12-08 03:11:13.60973+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'upg-booked-1', '\xe94508cae4d93d5c95dd27420cf0727c818ecc106069596a45ce9c631494df85', '{"result": {"position": {"Seq": 42, "TxID": 1807}, "reservation": {"id": "rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1", "end": "2026-12-09T04:11:00Z", "spec": {"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}, "start": "2026-12-09T03:11:00Z", "state": "booked", "nodeId": "demo-node-1", "poolId": "demo-pool", "tenant": "acme", "charges": {"gpu": 1}, "version": 1, "priority": 0, "deviceIds": ["GPU-demo-node-1-0"], "conditions": [], "preemptible": false, "priorityClass": "standard"}}}', '2026-12-07 03:11:16.426023+00', '2026-12-08 03:11:16.426023+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'upg-rel-1', '\x38584c83a4ea5cc00a176df0e06df7237a141caca5c86e5e44872e6f2f5a584d', '{"result": {"position": {"Seq": 44, "TxID": 1821}, "reservation": {"id": "rsv_01a24e7c-017e-7347-a620-28413c3db9d4", "end": "2026-12-07T04:11:00Z", "spec": {"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}, "start": "2026-12-07T03:11:19.426005Z", "state": "booked", "nodeId": "demo-node-1", "poolId": "demo-pool", "tenant": "acme", "charges": {"gpu": 1}, "version": 1, "priority": 0, "deviceIds": ["GPU-demo-node-1-2"], "conditions": [], "preemptible": false, "priorityClass": "standard"}}}', '2026-12-07 03:11:19.426005+00', '2026-12-08 03:11:19.426005+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'upg-long-1', '\x38e4f0d664f10c4a4294f23a41e1d237e1a4a188a180b07a5d566c24c790f842', '{"code": "INVALID_ARGUMENT", "error": "a reservation is at most 90 days long; [2026-12-10T03:11:00Z, 2029-02-14T03:11:00Z) is longer"}', '2026-12-07 03:11:22.683777+00', '2026-12-08 03:11:22.683777+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'upg-pend-1', '\x57f689b22d9ff81558c26e1027de0b8c51c0a4cb25492d4b484bc3cdf2ad2b8a', '{"result": {"position": {"Seq": 50, "TxID": 1875}, "reservation": {"id": "rsv_01a24e7c-1c1c-78e6-8a6e-2aa6d8c99706", "end": "2026-12-07T05:11:00Z", "spec": {"gpu": {"kind": "gpu", "count": 8, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}, "start": "2026-12-07T03:11:26.236941Z", "state": "pending", "poolId": "demo-pool", "tenant": "acme", "charges": {"gpu": 8}, "version": 1, "priority": 0, "conditions": [{"type": "Unschedulable", "reason": "NoNodeFits", "status": true, "message": "no node can take this reservation now: demo-node-1: 5 free H100-80GB GPUs in the window, needs 8; demo-node-2: 0 free H100-80GB GPUs in the window, needs 8; demo-node-3: 0 free H100-80GB GPUs in the window, needs 8"}], "preemptible": false, "priorityClass": "standard"}}}', '2026-12-07 03:11:26.236941+00', '2026-12-08 03:11:26.236941+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'upg-longact-1', '\x268f9493ee5e613a32a0167f25aa7b25db129dcd69db7cacc75eaeb85934862f', '{"code": "INVALID_ARGUMENT", "error": "a reservation is at most 90 days long; [2026-12-07T03:11:28Z, 2028-11-06T03:11:00Z) is longer"}', '2026-12-07 03:11:28.945824+00', '2026-12-08 03:11:28.945824+00');
INSERT INTO public.idempotency_keys VALUES ('ops', 'demo-operator', 'cli-d6597ee72772bd16d44c9ff7', '\x72b5be8ac57fb414af8bb551fb732a920cf727f35f6cb4234a56cc0d6b7576f6', '{"result": {"id": "upg-ratio-pool", "kind": "vps-host", "siteId": "demo-site", "version": 1, "cpuRatio": 2, "position": {"Seq": 53, "TxID": 1907}, "diskRatio": 1.25, "memoryRatio": 1.5, "workloadNetwork": "none"}}', '2026-12-07 03:11:31.678675+00', '2026-12-08 03:11:31.678675+00');
INSERT INTO public.idempotency_keys VALUES ('ops', 'demo-operator', 'cli-3c5d865d3f5d713f68dffa57', '\xb6603b7dfc2dff54ad9778d988a95ab9807a7a656c6cbac9d466b8d0e8c2d26b', '{"result": {"name": "upg-batch", "value": -100, "version": 1, "position": {"Seq": 58, "TxID": 1927}, "createdAt": "2026-12-07T03:11:32.425528Z", "isDefault": false, "description": "upgrade", "preemptible": true, "graceSeconds": 60}}', '2026-12-07 03:11:32.425528+00', '2026-12-08 03:11:32.425528+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'upg-tol-1', '\xe6a15f00efcb696a8226f19997d4447b44620c361aad91bd4604c8349be6a118', '{"result": {"position": {"Seq": 64, "TxID": 1975}, "reservation": {"id": "rsv_01a24e7c-3a3a-760b-a030-d9839d315bdf", "end": "2026-12-08T03:11:00Z", "spec": {"gpu": {"kind": "slot", "count": 1, "model": "L4-24GB", "slotKind": "time-slice"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": ["dedicated=ml"]}, "start": "2026-12-07T03:11:34.035509Z", "state": "booked", "nodeId": "demo-node-3", "poolId": "demo-pool", "tenant": "acme", "charges": {"gpu": 1}, "version": 1, "priority": 0, "deviceIds": ["GPU-demo-node-3-0/s1"], "conditions": [], "preemptible": false, "priorityClass": "standard"}}}', '2026-12-07 03:11:34.035509+00', '2026-12-08 03:11:34.035509+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'upg-batch-1', '\xd4a4d7eb8623cddec1b97818caffeb83cd3ddc06f15904e4d4c4401df5cba6e0', '{"result": {"position": {"Seq": 71, "TxID": 2015}, "reservation": {"id": "rsv_01a24e7c-4935-75ca-90fb-54a7efd68c5c", "end": "2026-12-08T03:11:00Z", "spec": {"gpu": {"kind": "mig", "count": 1, "migProfile": "1g.10gb"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}, "start": "2026-12-07T03:11:37.784432Z", "state": "booked", "nodeId": "demo-node-2", "poolId": "demo-pool", "tenant": "acme", "charges": {"gpu": 1}, "version": 1, "priority": -100, "deviceIds": ["GPU-demo-node-2-1/mig-2"], "conditions": [], "preemptible": true, "priorityClass": "upg-batch"}}}', '2026-12-07 03:11:37.784432+00', '2026-12-08 03:11:37.784432+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'cli-a3b80e1d9fa91a1c9626b7ed', '\xef924fbfa3dd7d7d697bb28c72b4a99f745d3b422898b74a82893c758b7e4c39', '{"result": {"instance": {"id": "ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1", "spec": {"command": "sleep 100000"}, "state": "requested", "nodeId": "demo-node-1", "tenant": "acme", "version": 1, "createdAt": "2026-12-07T03:11:46.455894Z", "updatedAt": "2026-12-07T03:11:46.455894Z", "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "reservationId": "rsv_01a24e7b-eab2-700c-bd50-30e24ff97714"}, "position": {"Seq": 78, "TxID": 2080}}}', '2026-12-07 03:11:46.455894+00', '2026-12-08 03:11:46.455894+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'cli-4ab1000aee50e53c3c82dd28', '\xdcd29dc4b39d507d7f87feb7366d9ce002886cb6ef6bdc9ea2f74aedb60af150', '{"result": {"position": {"Seq": 85, "TxID": 2138}, "reservation": {"id": "rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1", "end": "2026-12-09T05:11:00Z", "spec": {"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}, "start": "2026-12-09T03:11:00Z", "state": "booked", "nodeId": "demo-node-1", "poolId": "demo-pool", "tenant": "acme", "charges": {"gpu": 1}, "version": 2, "priority": 0, "deviceIds": ["GPU-demo-node-1-0"], "conditions": [], "preemptible": false, "priorityClass": "standard"}}}', '2026-12-07 03:11:55.754597+00', '2026-12-08 03:11:55.754597+00');


--
-- Data for Name: instances; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.instances VALUES ('ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1', 'acme', 'rsv_01a24e7b-eab2-700c-bd50-30e24ff97714', 'alc_01a24e7b-eaef-7f3c-8d35-04821d222302', 'demo-node-1', '{"command": "sleep 100000"}', 'running', '', 3, '2026-12-07 03:11:46.455894+00', '2026-12-07 03:11:48.409352+00', NULL);


--
-- Data for Name: leases; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.leases VALUES ('gateway:vm', 'vm-7685-96ee6215', 1, '-infinity');
INSERT INTO public.leases VALUES ('singleton:outbox-dispatch:webhooks', 'vm-7685-96ee6215', 1, '-infinity');
INSERT INTO public.leases VALUES ('singleton:outbox-dispatch:device-holders', 'vm-7685-96ee6215', 1, '-infinity');
INSERT INTO public.leases VALUES ('singleton:outbox-dispatch:usage-windows', 'vm-7685-96ee6215', 1, '-infinity');
INSERT INTO public.leases VALUES ('shard:0', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:1', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:10', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:11', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:12', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:13', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:14', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:15', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:2', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:3', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:4', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:5', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:6', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:7', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:8', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('shard:9', 'vm-7685-96ee6215', 1, '2026-12-07 03:12:11.965957+00');
INSERT INTO public.leases VALUES ('singleton:outbox-dispatch:reservations', 'vm-7685-96ee6215', 1, '-infinity');
INSERT INTO public.leases VALUES ('singleton:outbox-dispatch:fleet', 'vm-7685-96ee6215', 1, '-infinity');


--
-- Data for Name: node_commands; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.node_commands OVERRIDING SYSTEM VALUE VALUES ('cmd_01a24e7b-eb38-743f-924f-f15d355f5df6', 'acme', 'demo-user', 'demo-node-1', 'alc_01a24e7b-eaef-7f3c-8d35-04821d222302', 'assign:alc_01a24e7b-eaef-7f3c-8d35-04821d222302', 'assign', true, '{"end": "2026-12-08T03:11:00Z", "vcpu": 4, "start": "2026-12-07T03:11:13.60973Z", "diskGb": 10, "devices": [{"id": "GPU-demo-node-1-6", "gpu": "GPU-demo-node-1-6", "kind": "gpu", "visible": "GPU-demo-node-1-6"}, {"id": "GPU-demo-node-1-7", "gpu": "GPU-demo-node-1-7", "kind": "gpu", "visible": "GPU-demo-node-1-7"}], "memoryMb": 8192, "generation": 1, "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "reservationId": "rsv_01a24e7b-eab2-700c-bd50-30e24ff97714"}', 0, 'succeeded', NULL, 'assigned alc_01a24e7b-eaef-7f3c-8d35-04821d222302: 2 devices (CUDA_VISIBLE_DEVICES=GPU-demo-node-1-6,GPU-demo-node-1-7), 4 vCPU, 8192 MiB, [2026-12-07T03:11:13Z, 2026-12-08T03:11:00Z)', '', 4, 1, 'jnl_a769808b7d29249e80a31e89df9ca3c5', '2026-12-07 03:11:13.60973+00', '2026-12-07 03:11:13.970373+00', '2026-12-07 03:11:14.052549+00', NULL, 1, 1);
INSERT INTO public.node_commands OVERRIDING SYSTEM VALUE VALUES ('cmd_01a24e7c-01c4-786a-ac19-0a2ae57e4982', 'acme', 'demo-user', 'demo-node-1', 'alc_01a24e7c-019e-73b4-ada2-608d17aaa34a', 'assign:alc_01a24e7c-019e-73b4-ada2-608d17aaa34a', 'assign', true, '{"end": "2026-12-07T04:11:00Z", "vcpu": 0, "start": "2026-12-07T03:11:19.426005Z", "diskGb": 0, "devices": [{"id": "GPU-demo-node-1-2", "gpu": "GPU-demo-node-1-2", "kind": "gpu", "visible": "GPU-demo-node-1-2"}], "memoryMb": 0, "generation": 2, "allocationId": "alc_01a24e7c-019e-73b4-ada2-608d17aaa34a", "reservationId": "rsv_01a24e7c-017e-7347-a620-28413c3db9d4"}', 0, 'succeeded', NULL, 'assigned alc_01a24e7c-019e-73b4-ada2-608d17aaa34a: 1 devices (CUDA_VISIBLE_DEVICES=GPU-demo-node-1-2), 0 vCPU, 0 MiB, [2026-12-07T03:11:19Z, 2026-12-07T04:11:00Z)', '', 4, 1, 'jnl_a769808b7d29249e80a31e89df9ca3c5', '2026-12-07 03:11:19.426005+00', '2026-12-07 03:11:19.989325+00', '2026-12-07 03:11:20.057978+00', NULL, 2, 2);
INSERT INTO public.node_commands OVERRIDING SYSTEM VALUE VALUES ('cmd_01a24e7c-3039-71e5-a007-2cfde40f48dc', 'acme', 'demo-user', 'demo-node-1', 'alc_01a24e7c-019e-73b4-ada2-608d17aaa34a', 'unassign:alc_01a24e7c-019e-73b4-ada2-608d17aaa34a', 'unassign', true, '{"reason": "reservation released", "generation": 3, "allocationId": "alc_01a24e7c-019e-73b4-ada2-608d17aaa34a"}', 0, 'succeeded', NULL, 'unassigned alc_01a24e7c-019e-73b4-ada2-608d17aaa34a', '', 4, 1, 'jnl_a769808b7d29249e80a31e89df9ca3c5', '2026-12-07 03:11:31.307186+00', '2026-12-07 03:11:32.00427+00', '2026-12-07 03:11:32.425116+00', NULL, 3, 3);
INSERT INTO public.node_commands OVERRIDING SYSTEM VALUE VALUES ('cmd_01a24e7c-3b37-70a3-b834-3d9442cda5fc', 'acme', 'demo-user', 'demo-node-3', 'alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73', 'assign:alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73', 'assign', true, '{"end": "2026-12-08T03:11:00Z", "vcpu": 0, "start": "2026-12-07T03:11:34.035509Z", "diskGb": 0, "devices": [{"id": "GPU-demo-node-3-0/s1", "gpu": "GPU-demo-node-3-0", "kind": "slot", "mode": "time-slice", "visible": "GPU-demo-node-3-0"}], "memoryMb": 0, "generation": 2, "allocationId": "alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73", "reservationId": "rsv_01a24e7c-3a3a-760b-a030-d9839d315bdf"}', 0, 'succeeded', NULL, 'assigned alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73: 1 devices (CUDA_VISIBLE_DEVICES=GPU-demo-node-3-0), 0 vCPU, 0 MiB, [2026-12-07T03:11:34Z, 2026-12-08T03:11:00Z)', '', 4, 1, 'jnl_a575cae87d2e07212e71fb1ea9833a13', '2026-12-07 03:11:34.035509+00', '2026-12-07 03:11:34.98491+00', '2026-12-07 03:11:35.056607+00', NULL, 2, 4);
INSERT INTO public.node_commands OVERRIDING SYSTEM VALUE VALUES ('cmd_01a24e7c-4957-73f5-839c-7100bf8a7ef4', 'acme', 'demo-user', 'demo-node-2', 'alc_01a24e7c-494f-7952-8d7d-57152f604d4e', 'assign:alc_01a24e7c-494f-7952-8d7d-57152f604d4e', 'assign', true, '{"end": "2026-12-08T03:11:00Z", "vcpu": 0, "start": "2026-12-07T03:11:37.784432Z", "diskGb": 0, "devices": [{"id": "GPU-demo-node-2-1/mig-2", "gpu": "GPU-demo-node-2-1", "kind": "mig", "visible": "GPU-demo-node-2-1/mig-2"}], "memoryMb": 0, "generation": 1, "allocationId": "alc_01a24e7c-494f-7952-8d7d-57152f604d4e", "reservationId": "rsv_01a24e7c-4935-75ca-90fb-54a7efd68c5c"}', 0, 'succeeded', NULL, 'assigned alc_01a24e7c-494f-7952-8d7d-57152f604d4e: 1 devices (CUDA_VISIBLE_DEVICES=GPU-demo-node-2-1/mig-2), 0 vCPU, 0 MiB, [2026-12-07T03:11:37Z, 2026-12-08T03:11:00Z)', '', 4, 1, 'jnl_808d6d091756f3312afd537e9361d046', '2026-12-07 03:11:37.784432+00', '2026-12-07 03:11:37.966588+00', '2026-12-07 03:11:38.079689+00', NULL, 1, 5);
INSERT INTO public.node_commands OVERRIDING SYSTEM VALUE VALUES ('cmd_01a24e7c-6b38-7691-a66e-91084c5ebb64', 'acme', 'demo-user', 'demo-node-1', 'alc_01a24e7b-eaef-7f3c-8d35-04821d222302', 'inst:ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1:instance-start', 'instance-start', false, '{"script": "sleep 100000", "instanceId": "ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1"}', 0, 'succeeded', NULL, 'instance ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1 started', '', 4, 1, 'jnl_a769808b7d29249e80a31e89df9ca3c5', '2026-12-07 03:11:46.455894+00', '2026-12-07 03:11:47.029689+00', '2026-12-07 03:11:48.409352+00', 'ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1', NULL, 6);


--
-- Data for Name: node_credentials; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.node_credentials VALUES ('ncr_Lzgygi_PFToz', 'demo-node-3', '\xd8ba7dd31cc8ff200c0996fc853d7e8b94da8040cb2acac9d6533a1c03be5484', '2026-12-07 03:11:00.144489+00', NULL, NULL);
INSERT INTO public.node_credentials VALUES ('ncr_COF8h_X5GzBq', 'demo-node-2', '\x2488e61defc82c2c8a96b0cb63af3e0ac356a714149cbd243ec3ec535e82cfb0', '2026-12-07 03:11:00.140384+00', NULL, NULL);
INSERT INTO public.node_credentials VALUES ('ncr_iBuM0qElg_Z4', 'demo-node-1', '\x0f25958f7fcd0b7cbe87645a1cc728650cf354eea4d5a33188041c4c8caf867a', '2026-12-07 03:11:00.264321+00', NULL, NULL);


--
-- Data for Name: node_desired; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.node_desired VALUES ('demo-node-1', 3, '2026-12-07 03:11:31.307186+00');
INSERT INTO public.node_desired VALUES ('demo-node-3', 2, '2026-12-07 03:11:34.035509+00');
INSERT INTO public.node_desired VALUES ('demo-node-2', 1, '2026-12-07 03:11:37.784432+00');


--
-- Data for Name: node_join_tokens; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: node_liveness_sweeps; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.node_liveness_sweeps VALUES (1, '2026-12-07 03:11:55.742942+00');


--
-- Data for Name: node_resources; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.node_resources VALUES ('demo-node-2', 'disk', 4000, 1, 0);
INSERT INTO public.node_resources VALUES ('demo-node-2', 'memory', 524288, 1, 0);
INSERT INTO public.node_resources VALUES ('demo-node-2', 'vcpu', 64, 1, 0);
INSERT INTO public.node_resources VALUES ('demo-node-3', 'disk', 2000, 1, 0);
INSERT INTO public.node_resources VALUES ('demo-node-3', 'memory', 262144, 1, 0);
INSERT INTO public.node_resources VALUES ('demo-node-3', 'vcpu', 32, 1, 0);
INSERT INTO public.node_resources VALUES ('demo-node-1', 'disk', 8000, 1, 10);
INSERT INTO public.node_resources VALUES ('demo-node-1', 'memory', 1048576, 1, 8192);
INSERT INTO public.node_resources VALUES ('demo-node-1', 'vcpu', 128, 1, 4);


--
-- Data for Name: node_session_credentials; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.node_session_credentials VALUES ('demo-node-3', 1, 'ncr_Lzgygi_PFToz');
INSERT INTO public.node_session_credentials VALUES ('demo-node-2', 1, 'ncr_COF8h_X5GzBq');
INSERT INTO public.node_session_credentials VALUES ('demo-node-1', 1, 'ncr_iBuM0qElg_Z4');


--
-- Data for Name: node_sessions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.node_sessions VALUES ('demo-node-3', 1, 'vm', 1, 'jnl_a575cae87d2e07212e71fb1ea9833a13', true, '2026-12-07 03:11:00.302619+00', '2026-12-07 03:11:50.65848+00', NULL, NULL, '2026-12-07 03:11:00.302619+00', 'none', NULL, 2, 1);
INSERT INTO public.node_sessions VALUES ('demo-node-2', 1, 'vm', 1, 'jnl_808d6d091756f3312afd537e9361d046', true, '2026-12-07 03:11:00.353014+00', '2026-12-07 03:11:50.698911+00', NULL, NULL, '2026-12-07 03:11:00.353014+00', 'none', NULL, 1, 1);
INSERT INTO public.node_sessions VALUES ('demo-node-1', 1, 'vm', 1, 'jnl_a769808b7d29249e80a31e89df9ca3c5', true, '2026-12-07 03:11:00.428017+00', '2026-12-07 03:11:50.838455+00', NULL, NULL, '2026-12-07 03:11:00.428017+00', 'none', NULL, 3, 1);


--
-- Data for Name: nodes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.nodes VALUES ('demo-node-2', 'demo-pool', false, '{}', '{}', 'connected', 2, '2026-12-07 03:10:58.537047+00', '[]', 'demo-site');
INSERT INTO public.nodes VALUES ('demo-node-1', 'demo-pool', false, '{}', '{}', 'connected', 2, '2026-12-07 03:10:58.357563+00', '[]', 'demo-site');
INSERT INTO public.nodes VALUES ('demo-node-3', 'demo-pool', false, '{dedicated=ml}', '{}', 'connected', 3, '2026-12-07 03:10:58.627465+00', '[]', 'demo-site');


--
-- Data for Name: outbox; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.outbox VALUES ('01a24e7b-af2b-780c-94b0-9188be6d99e1', '1621', 1, 'site.created', NULL, 'sites/demo-site', '{"id": "demo-site", "name": "Demo site", "version": 1}', '2026-12-07 03:10:58.345857+00');
INSERT INTO public.outbox VALUES ('01a24e7b-af30-71ff-8944-5b47e4f82650', '1622', 2, 'pool.created', NULL, 'pools/demo-pool', '{"id": "demo-pool", "kind": "bare-metal", "siteId": "demo-site", "version": 1, "cpuRatio": 1, "diskRatio": 1, "memoryRatio": 1, "workloadNetwork": "none"}', '2026-12-07 03:10:58.349812+00');
INSERT INTO public.outbox VALUES ('01a24e7b-afc6-77c4-9d15-4c120e16a989', '1625', 3, 'node.registered', NULL, 'nodes/demo-node-1', '{"id": "demo-node-1", "vcpu": 128, "diskGb": 8000, "poolId": "demo-pool", "taints": [], "version": 1, "cordoned": false, "memoryMb": 1048576}', '2026-12-07 03:10:58.357563+00');
INSERT INTO public.outbox VALUES ('01a24e7b-afd1-72a1-ac29-2ec63ef75ec7', '1625', 4, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-0', '{"id": "GPU-demo-node-1-0", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.357563+00');
INSERT INTO public.outbox VALUES ('01a24e7b-afd5-7b3e-91ad-b4d0b6bf4480', '1625', 5, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-1', '{"id": "GPU-demo-node-1-1", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.357563+00');
INSERT INTO public.outbox VALUES ('01a24e7b-afdb-7658-9f08-f9cdb640c577', '1625', 6, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-2', '{"id": "GPU-demo-node-1-2", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.357563+00');
INSERT INTO public.outbox VALUES ('01a24e7b-afdc-73dd-bf88-1ddc8de5661e', '1625', 7, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-3', '{"id": "GPU-demo-node-1-3", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.357563+00');
INSERT INTO public.outbox VALUES ('01a24e7b-afdc-7907-befb-6715cf2cafba', '1625', 8, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-4', '{"id": "GPU-demo-node-1-4", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.357563+00');
INSERT INTO public.outbox VALUES ('01a24e7b-afdf-7d68-871f-692b532274ad', '1625', 9, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-5', '{"id": "GPU-demo-node-1-5", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.357563+00');
INSERT INTO public.outbox VALUES ('01a24e7b-afe1-7951-9b56-8aa09c7f815c', '1625', 10, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-6', '{"id": "GPU-demo-node-1-6", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.357563+00');
INSERT INTO public.outbox VALUES ('01a24e7b-afe5-7093-a9c6-0987a3c1504c', '1625', 11, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-7', '{"id": "GPU-demo-node-1-7", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.357563+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b031-7352-88f2-f247db8f0085', '1626', 12, 'node.registered', NULL, 'nodes/demo-node-2', '{"id": "demo-node-2", "vcpu": 64, "diskGb": 4000, "poolId": "demo-pool", "taints": [], "version": 1, "cordoned": false, "memoryMb": 524288}', '2026-12-07 03:10:58.537047+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b039-7ceb-a32e-d2fd6af46bdf', '1626', 13, 'gpu.registered', NULL, 'devices/GPU-demo-node-2-0', '{"id": "GPU-demo-node-2-0", "model": "A100-80GB", "health": "healthy", "layout": {"mig": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], "mode": "mig"}, "nodeId": "demo-node-2", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.537047+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b040-70c7-97c7-c7f0bd5cddfb', '1626', 14, 'gpu.registered', NULL, 'devices/GPU-demo-node-2-1', '{"id": "GPU-demo-node-2-1", "model": "A100-80GB", "health": "healthy", "layout": {"mig": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], "mode": "mig"}, "nodeId": "demo-node-2", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.537047+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b040-7d2a-9399-2cacb6273343', '1626', 15, 'gpu.registered', NULL, 'devices/GPU-demo-node-2-2', '{"id": "GPU-demo-node-2-2", "model": "A100-80GB", "health": "healthy", "layout": {"mig": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], "mode": "mig"}, "nodeId": "demo-node-2", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.537047+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b041-73af-91cf-c4a18d282773', '1626', 16, 'gpu.registered', NULL, 'devices/GPU-demo-node-2-3', '{"id": "GPU-demo-node-2-3", "model": "A100-80GB", "health": "healthy", "layout": {"mig": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], "mode": "mig"}, "nodeId": "demo-node-2", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.537047+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b0a7-7c76-9a8c-5cfff6d17bdf', '1629', 17, 'node.registered', NULL, 'nodes/demo-node-3', '{"id": "demo-node-3", "vcpu": 32, "diskGb": 2000, "poolId": "demo-pool", "taints": [], "version": 1, "cordoned": false, "memoryMb": 262144}', '2026-12-07 03:10:58.627465+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b0ac-721d-8328-feada37f4d2e', '1629', 18, 'gpu.registered', NULL, 'devices/GPU-demo-node-3-0', '{"id": "GPU-demo-node-3-0", "model": "L4-24GB", "health": "healthy", "layout": {"mode": "time-slice", "slots": 4}, "nodeId": "demo-node-3", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.627465+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b0b3-797a-8e04-4148af145053', '1629', 19, 'gpu.registered', NULL, 'devices/GPU-demo-node-3-1', '{"id": "GPU-demo-node-3-1", "model": "L4-24GB", "health": "healthy", "layout": {"mode": "time-slice", "slots": 4}, "nodeId": "demo-node-3", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.627465+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b0b7-7417-803a-53a9f80fc8bd', '1629', 20, 'gpu.registered', NULL, 'devices/GPU-demo-node-3-2', '{"id": "GPU-demo-node-3-2", "model": "L4-24GB", "health": "healthy", "layout": {"mode": "time-slice", "slots": 4}, "nodeId": "demo-node-3", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.627465+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b0bb-7760-a252-41d5ccb93fe5', '1629', 21, 'gpu.registered', NULL, 'devices/GPU-demo-node-3-3', '{"id": "GPU-demo-node-3-3", "model": "L4-24GB", "health": "healthy", "layout": {"mode": "time-slice", "slots": 4}, "nodeId": "demo-node-3", "version": 1, "quarantined": false}', '2026-12-07 03:10:58.627465+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b0fb-72d1-a503-04fc808c07d3', '1633', 22, 'quota.set', 'acme', 'quotas/acme/disk', '{"max": 20000, "tenant": "acme", "version": 1, "resource": "disk"}', '2026-12-07 03:10:58.799423+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b10c-717c-9b1e-90a46a21980a', '1634', 23, 'quota.set', 'acme', 'quotas/acme/gpu', '{"max": 16, "tenant": "acme", "version": 1, "resource": "gpu"}', '2026-12-07 03:10:58.816171+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b119-7954-b791-58dc64ff42ce', '1637', 24, 'quota.set', 'acme', 'quotas/acme/vcpu', '{"max": 256, "tenant": "acme", "version": 1, "resource": "vcpu"}', '2026-12-07 03:10:58.841109+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b11a-7514-9523-ca70c1a8b453', '1638', 25, 'quota.set', 'acme', 'quotas/acme/memory', '{"max": 2097152, "tenant": "acme", "version": 1, "resource": "memory"}', '2026-12-07 03:10:58.841926+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b6aa-713c-98d8-aae65a1bca0d', '1667', 26, 'node.joined', NULL, 'nodes/demo-node-3', '{"id": "demo-node-3", "credentialId": "ncr_Lzgygi_PFToz"}', '2026-12-07 03:11:00.144489+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b6bf-7a8e-8e2b-fb8630630514', '1668', 27, 'node.joined', NULL, 'nodes/demo-node-2', '{"id": "demo-node-2", "credentialId": "ncr_COF8h_X5GzBq"}', '2026-12-07 03:11:00.140384+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b70d-721c-b888-b787db2131e9', '1669', 28, 'node.joined', NULL, 'nodes/demo-node-1', '{"id": "demo-node-1", "credentialId": "ncr_iBuM0qElg_Z4"}', '2026-12-07 03:11:00.264321+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b7c8-7428-ace2-1e960f48d4c0', '1671', 29, 'node.connected', NULL, 'nodes/demo-node-3', '{"id": "demo-node-3", "state": "connected", "poolId": "demo-pool", "version": 2, "gatewayId": "vm", "conditions": [], "sessionEpoch": 1, "previousState": "registered", "noScheduleReasons": []}', '2026-12-07 03:11:00.302619+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b7e0-7310-a0ea-ea49ecd46030', '1673', 30, 'node.connected', NULL, 'nodes/demo-node-2', '{"id": "demo-node-2", "state": "connected", "poolId": "demo-pool", "version": 2, "gatewayId": "vm", "conditions": [], "sessionEpoch": 1, "previousState": "registered", "noScheduleReasons": []}', '2026-12-07 03:11:00.353014+00');
INSERT INTO public.outbox VALUES ('01a24e7c-32bb-7c16-95d9-d663c2774b0c', '1918', 55, 'node_assignment.sent', NULL, 'node-commands/cmd_01a24e7c-3039-71e5-a007-2cfde40f48dc', '{"id": "cmd_01a24e7c-3039-71e5-a007-2cfde40f48dc", "kind": "unassign", "state": "sent", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 2, "createdAt": "2026-12-07T03:11:31.307186Z", "journalId": "jnl_a769808b7d29249e80a31e89df9ca3c5", "retrySafe": true, "allocationId": "alc_01a24e7c-019e-73b4-ada2-608d17aaa34a", "sessionEpoch": 1, "minGeneration": 0, "idempotencyKey": "unassign:alc_01a24e7c-019e-73b4-ada2-608d17aaa34a"}', '2026-12-07 03:11:32.00427+00');
INSERT INTO public.outbox VALUES ('01a24e7b-b854-7123-a3ce-ab9c46130800', '1675', 31, 'node.connected', NULL, 'nodes/demo-node-1', '{"id": "demo-node-1", "state": "connected", "poolId": "demo-pool", "version": 2, "gatewayId": "vm", "conditions": [], "sessionEpoch": 1, "previousState": "registered", "noScheduleReasons": []}', '2026-12-07 03:11:00.428017+00');
INSERT INTO public.outbox VALUES ('01a24e7b-d7ad-7801-8cf4-bdc00874fa64', '1729', 32, 'webhook_endpoint.created', 'acme', 'webhook-endpoints/we_8c0ce326ff5eab5341c307a6', '{"url": "http://127.0.0.1:18132/hook", "enabled": true, "version": 1, "endpointId": "we_8c0ce326ff5eab5341c307a6", "eventTypes": []}', '2026-12-07 03:11:08.688212+00');
INSERT INTO public.outbox VALUES ('01a24e7b-eb38-740a-a13e-3f9e469a73b8', '1764', 35, 'reservation.booked', 'acme', 'reservations/rsv_01a24e7b-eab2-700c-bd50-30e24ff97714', '{"id": "rsv_01a24e7b-eab2-700c-bd50-30e24ff97714", "end": "2026-12-08T03:11:00Z", "gpus": 2, "vcpu": 4, "start": "2026-12-07T03:11:13.60973Z", "state": "booked", "diskGb": 10, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 1, "gpuModel": "H100-80GB", "memoryMb": 8192, "priority": 0, "deviceIds": ["GPU-demo-node-1-6", "GPU-demo-node-1-7"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "placedPoolId": "demo-pool", "priorityClass": "standard"}', '2026-12-07 03:11:13.60973+00');
INSERT INTO public.outbox VALUES ('01a24e7b-eb38-7516-84f3-d4346f9a7436', '1764', 36, 'node_assignment.queued', NULL, 'node-commands/cmd_01a24e7b-eb38-743f-924f-f15d355f5df6', '{"id": "cmd_01a24e7b-eb38-743f-924f-f15d355f5df6", "kind": "assign", "state": "queued", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 1, "createdAt": "2026-12-07T03:11:13.60973Z", "retrySafe": true, "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7b-eaef-7f3c-8d35-04821d222302"}', '2026-12-07 03:11:13.60973+00');
INSERT INTO public.outbox VALUES ('01a24e7c-01c4-782e-a68e-b2da2ee1719f', '1821', 44, 'reservation.booked', 'acme', 'reservations/rsv_01a24e7c-017e-7347-a620-28413c3db9d4', '{"id": "rsv_01a24e7c-017e-7347-a620-28413c3db9d4", "end": "2026-12-07T04:11:00Z", "gpus": 1, "vcpu": 0, "start": "2026-12-07T03:11:19.426005Z", "state": "booked", "diskGb": 0, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 1, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": ["GPU-demo-node-1-2"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24e7c-019e-73b4-ada2-608d17aaa34a", "placedPoolId": "demo-pool", "priorityClass": "standard"}', '2026-12-07 03:11:19.426005+00');
INSERT INTO public.outbox VALUES ('01a24e7c-01c4-793a-879a-41aec63208ce', '1821', 45, 'node_assignment.queued', NULL, 'node-commands/cmd_01a24e7c-01c4-786a-ac19-0a2ae57e4982', '{"id": "cmd_01a24e7c-01c4-786a-ac19-0a2ae57e4982", "kind": "assign", "state": "queued", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 1, "createdAt": "2026-12-07T03:11:19.426005Z", "retrySafe": true, "allocationId": "alc_01a24e7c-019e-73b4-ada2-608d17aaa34a", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7c-019e-73b4-ada2-608d17aaa34a"}', '2026-12-07 03:11:19.426005+00');
INSERT INTO public.outbox VALUES ('01a24e7b-ec3f-7108-9bdc-73fd20bf9284', '1775', 37, 'node_assignment.sent', NULL, 'node-commands/cmd_01a24e7b-eb38-743f-924f-f15d355f5df6', '{"id": "cmd_01a24e7b-eb38-743f-924f-f15d355f5df6", "kind": "assign", "state": "sent", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 2, "createdAt": "2026-12-07T03:11:13.60973Z", "journalId": "jnl_a769808b7d29249e80a31e89df9ca3c5", "retrySafe": true, "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "sessionEpoch": 1, "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7b-eaef-7f3c-8d35-04821d222302"}', '2026-12-07 03:11:13.970373+00');
INSERT INTO public.outbox VALUES ('01a24e7b-ec67-782d-95c2-d20824264022', '1784', 38, 'node_assignment.running', NULL, 'node-commands/cmd_01a24e7b-eb38-743f-924f-f15d355f5df6', '{"id": "cmd_01a24e7b-eb38-743f-924f-f15d355f5df6", "kind": "assign", "state": "running", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 3, "createdAt": "2026-12-07T03:11:13.60973Z", "retrySafe": true, "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7b-eaef-7f3c-8d35-04821d222302"}', '2026-12-07 03:11:14.013293+00');
INSERT INTO public.outbox VALUES ('01a24e7b-ecba-7499-8911-ef3a62e8ec6d', '1786', 39, 'node_assignment.succeeded', NULL, 'node-commands/cmd_01a24e7b-eb38-743f-924f-f15d355f5df6', '{"id": "cmd_01a24e7b-eb38-743f-924f-f15d355f5df6", "kind": "assign", "state": "succeeded", "nodeId": "demo-node-1", "output": "assigned alc_01a24e7b-eaef-7f3c-8d35-04821d222302: 2 devices (CUDA_VISIBLE_DEVICES=GPU-demo-node-1-6,GPU-demo-node-1-7), 4 vCPU, 8192 MiB, [2026-12-07T03:11:13Z, 2026-12-08T03:11:00Z)", "tenant": "acme", "payload": {}, "version": 4, "createdAt": "2026-12-07T03:11:13.60973Z", "retrySafe": true, "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7b-eaef-7f3c-8d35-04821d222302"}', '2026-12-07 03:11:14.052549+00');
INSERT INTO public.outbox VALUES ('01a24e7b-eca3-7960-9f72-0679b9be971b', '1777', 40, 'reservation.activated', 'acme', 'reservations/rsv_01a24e7b-eab2-700c-bd50-30e24ff97714', '{"id": "rsv_01a24e7b-eab2-700c-bd50-30e24ff97714", "end": "2026-12-08T03:11:00Z", "gpus": 2, "vcpu": 4, "start": "2026-12-07T03:11:13.60973Z", "state": "active", "diskGb": 10, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 2, "gpuModel": "H100-80GB", "memoryMb": 8192, "priority": 0, "deviceIds": ["GPU-demo-node-1-6", "GPU-demo-node-1-7"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "priorityClass": "standard"}', '2026-12-07 03:11:13.978737+00');
INSERT INTO public.outbox VALUES ('01a24e7c-03a9-7256-9687-abf9a8c7c199', '1833', 46, 'reservation.activated', 'acme', 'reservations/rsv_01a24e7c-017e-7347-a620-28413c3db9d4', '{"id": "rsv_01a24e7c-017e-7347-a620-28413c3db9d4", "end": "2026-12-07T04:11:00Z", "gpus": 1, "vcpu": 0, "start": "2026-12-07T03:11:19.426005Z", "state": "active", "diskGb": 0, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 2, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": ["GPU-demo-node-1-2"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24e7c-019e-73b4-ada2-608d17aaa34a", "priorityClass": "standard"}', '2026-12-07 03:11:19.969573+00');
INSERT INTO public.outbox VALUES ('01a24e7c-32c9-7e22-81b2-2bc8c2c7cecd', '1921', 56, 'node_assignment.running', NULL, 'node-commands/cmd_01a24e7c-3039-71e5-a007-2cfde40f48dc', '{"id": "cmd_01a24e7c-3039-71e5-a007-2cfde40f48dc", "kind": "unassign", "state": "running", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 3, "createdAt": "2026-12-07T03:11:31.307186Z", "retrySafe": true, "allocationId": "alc_01a24e7c-019e-73b4-ada2-608d17aaa34a", "minGeneration": 0, "idempotencyKey": "unassign:alc_01a24e7c-019e-73b4-ada2-608d17aaa34a"}', '2026-12-07 03:11:32.032657+00');
INSERT INTO public.outbox VALUES ('01a24e7c-344c-70a2-b63a-5868a3f170bd', '1928', 57, 'node_assignment.succeeded', NULL, 'node-commands/cmd_01a24e7c-3039-71e5-a007-2cfde40f48dc', '{"id": "cmd_01a24e7c-3039-71e5-a007-2cfde40f48dc", "kind": "unassign", "state": "succeeded", "nodeId": "demo-node-1", "output": "unassigned alc_01a24e7c-019e-73b4-ada2-608d17aaa34a", "tenant": "acme", "payload": {}, "version": 4, "createdAt": "2026-12-07T03:11:31.307186Z", "retrySafe": true, "allocationId": "alc_01a24e7c-019e-73b4-ada2-608d17aaa34a", "minGeneration": 0, "idempotencyKey": "unassign:alc_01a24e7c-019e-73b4-ada2-608d17aaa34a"}', '2026-12-07 03:11:32.425116+00');
INSERT INTO public.outbox VALUES ('01a24e7c-3e57-7135-b728-58c0e062026c', '1986', 66, 'node_assignment.sent', NULL, 'node-commands/cmd_01a24e7c-3b37-70a3-b834-3d9442cda5fc', '{"id": "cmd_01a24e7c-3b37-70a3-b834-3d9442cda5fc", "kind": "assign", "state": "sent", "nodeId": "demo-node-3", "tenant": "acme", "payload": {}, "version": 2, "createdAt": "2026-12-07T03:11:34.035509Z", "journalId": "jnl_a575cae87d2e07212e71fb1ea9833a13", "retrySafe": true, "allocationId": "alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73", "sessionEpoch": 1, "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73"}', '2026-12-07 03:11:34.98491+00');
INSERT INTO public.outbox VALUES ('01a24e7c-3e72-7cd2-9a7e-aea546810d2c', '1987', 67, 'reservation.activated', 'acme', 'reservations/rsv_01a24e7c-3a3a-760b-a030-d9839d315bdf', '{"id": "rsv_01a24e7c-3a3a-760b-a030-d9839d315bdf", "end": "2026-12-08T03:11:00Z", "gpus": 1, "vcpu": 0, "start": "2026-12-07T03:11:34.035509Z", "state": "active", "diskGb": 0, "nodeId": "demo-node-3", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "slot", "version": 2, "gpuModel": "L4-24GB", "memoryMb": 0, "priority": 0, "slotKind": "time-slice", "deviceIds": ["GPU-demo-node-3-0/s1"], "conditions": [], "preemptible": false, "tolerations": ["dedicated=ml"], "allocationId": "alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73", "priorityClass": "standard"}', '2026-12-07 03:11:34.987927+00');
INSERT INTO public.outbox VALUES ('01a24e7c-3e80-7031-8f3b-dfb3f9d90af9', '1992', 68, 'node_assignment.running', NULL, 'node-commands/cmd_01a24e7c-3b37-70a3-b834-3d9442cda5fc', '{"id": "cmd_01a24e7c-3b37-70a3-b834-3d9442cda5fc", "kind": "assign", "state": "running", "nodeId": "demo-node-3", "tenant": "acme", "payload": {}, "version": 3, "createdAt": "2026-12-07T03:11:34.035509Z", "retrySafe": true, "allocationId": "alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73"}', '2026-12-07 03:11:35.023153+00');
INSERT INTO public.outbox VALUES ('01a24e7c-3ea5-7e23-9eef-2889963a26a5', '1998', 69, 'node_assignment.succeeded', NULL, 'node-commands/cmd_01a24e7c-3b37-70a3-b834-3d9442cda5fc', '{"id": "cmd_01a24e7c-3b37-70a3-b834-3d9442cda5fc", "kind": "assign", "state": "succeeded", "nodeId": "demo-node-3", "output": "assigned alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73: 1 devices (CUDA_VISIBLE_DEVICES=GPU-demo-node-3-0), 0 vCPU, 0 MiB, [2026-12-07T03:11:34Z, 2026-12-08T03:11:00Z)", "tenant": "acme", "payload": {}, "version": 4, "createdAt": "2026-12-07T03:11:34.035509Z", "retrySafe": true, "allocationId": "alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73"}', '2026-12-07 03:11:35.056607+00');
INSERT INTO public.outbox VALUES ('01a24e7c-49fe-7a31-94b0-932eb4c320f9', '2024', 73, 'node_assignment.sent', NULL, 'node-commands/cmd_01a24e7c-4957-73f5-839c-7100bf8a7ef4', '{"id": "cmd_01a24e7c-4957-73f5-839c-7100bf8a7ef4", "kind": "assign", "state": "sent", "nodeId": "demo-node-2", "tenant": "acme", "payload": {}, "version": 2, "createdAt": "2026-12-07T03:11:37.784432Z", "journalId": "jnl_808d6d091756f3312afd537e9361d046", "retrySafe": true, "allocationId": "alc_01a24e7c-494f-7952-8d7d-57152f604d4e", "sessionEpoch": 1, "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7c-494f-7952-8d7d-57152f604d4e"}', '2026-12-07 03:11:37.966588+00');
INSERT INTO public.outbox VALUES ('01a24e7b-f662-7758-8db6-07af1ae313a2', '1807', 42, 'reservation.booked', 'acme', 'reservations/rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1', '{"id": "rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1", "end": "2026-12-09T04:11:00Z", "gpus": 1, "vcpu": 0, "start": "2026-12-09T03:11:00Z", "state": "booked", "diskGb": 0, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 1, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": ["GPU-demo-node-1-0"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24e7b-f605-768f-ab4e-e96ddf052f70", "placedPoolId": "demo-pool", "priorityClass": "standard"}', '2026-12-07 03:11:16.426023+00');
INSERT INTO public.outbox VALUES ('01a24e7c-1c36-7d1e-8524-d3324d3201ca', '1875', 50, 'reservation.pending', 'acme', 'reservations/rsv_01a24e7c-1c1c-78e6-8a6e-2aa6d8c99706', '{"id": "rsv_01a24e7c-1c1c-78e6-8a6e-2aa6d8c99706", "end": "2026-12-07T05:11:00Z", "gpus": 8, "vcpu": 0, "start": "2026-12-07T03:11:26.236941Z", "state": "pending", "diskGb": 0, "nodeId": "", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 1, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": null, "conditions": [{"type": "Unschedulable", "reason": "NoNodeFits", "status": true, "message": "no node can take this reservation now: demo-node-1: 5 free H100-80GB GPUs in the window, needs 8; demo-node-2: 0 free H100-80GB GPUs in the window, needs 8; demo-node-3: 0 free H100-80GB GPUs in the window, needs 8"}], "preemptible": false, "tolerations": [], "priorityClass": "standard"}', '2026-12-07 03:11:26.236941+00');
INSERT INTO public.outbox VALUES ('01a24e7c-2fed-7292-8509-f6fedb68aba2', '1898', 51, 'reservation.released', 'acme', 'reservations/rsv_01a24e7c-017e-7347-a620-28413c3db9d4', '{"id": "rsv_01a24e7c-017e-7347-a620-28413c3db9d4", "end": "2026-12-07T04:11:00Z", "gpus": 1, "vcpu": 0, "start": "2026-12-07T03:11:19.426005Z", "state": "released", "diskGb": 0, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 3, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": ["GPU-demo-node-1-2"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24e7c-019e-73b4-ada2-608d17aaa34a", "priorityClass": "standard"}', '2026-12-07 03:11:31.307186+00');
INSERT INTO public.outbox VALUES ('01a24e7c-3039-727f-ad7d-a9a68eb06fad', '1898', 52, 'node_assignment.queued', NULL, 'node-commands/cmd_01a24e7c-3039-71e5-a007-2cfde40f48dc', '{"id": "cmd_01a24e7c-3039-71e5-a007-2cfde40f48dc", "kind": "unassign", "state": "queued", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 1, "createdAt": "2026-12-07T03:11:31.307186Z", "retrySafe": true, "allocationId": "alc_01a24e7c-019e-73b4-ada2-608d17aaa34a", "minGeneration": 0, "idempotencyKey": "unassign:alc_01a24e7c-019e-73b4-ada2-608d17aaa34a"}', '2026-12-07 03:11:31.307186+00');
INSERT INTO public.outbox VALUES ('01a24e7c-3164-77fa-93bb-3e44c86305a7', '1907', 53, 'pool.created', NULL, 'pools/upg-ratio-pool', '{"id": "upg-ratio-pool", "kind": "vps-host", "siteId": "demo-site", "version": 1, "cpuRatio": 2, "diskRatio": 1.25, "memoryRatio": 1.5, "workloadNetwork": "none"}', '2026-12-07 03:11:31.678675+00');
INSERT INTO public.outbox VALUES ('01a24e7c-3297-7dc8-b98b-a9065380a2b2', '1913', 54, 'node.tainted', NULL, 'nodes/demo-node-3', '{"id": "demo-node-3", "taints": ["dedicated=ml"], "version": 3, "cordoned": false}', '2026-12-07 03:11:31.980867+00');
INSERT INTO public.outbox VALUES ('01a24e7c-344c-7b28-9daf-5580c7652a55', '1927', 58, 'priority_class.created', NULL, 'priority-classes/upg-batch', '{"name": "upg-batch", "value": -100, "version": 1, "isDefault": false, "description": "upgrade", "preemptible": true, "graceSeconds": 60}', '2026-12-07 03:11:32.425528+00');
INSERT INTO public.outbox VALUES ('01a24e7c-3532-7b5d-b8dd-3bce2aac7bb6', '1937', 59, 'tenant.priority_classes_set', 'acme', 'tenants/acme/priority-classes', '{"tenant": "acme", "classes": ["upg-batch"], "version": 1}', '2026-12-07 03:11:32.626353+00');
INSERT INTO public.outbox VALUES ('01a24e7c-361d-7aaa-8310-46270c9c6c2b', '1944', 60, 'tenant.fair_share_set', 'acme', 'tenants/acme/fair-share', '{"share": 4, "tenant": "acme", "version": 1}', '2026-12-07 03:11:32.889096+00');
INSERT INTO public.outbox VALUES ('01a24e7c-3739-7b22-a244-d6b72a6f968b', '1957', 61, 'quota.set', 'acme', 'quotas/acme/gpu', '{"max": 64, "tenant": "acme", "version": 2, "resource": "gpu"}', '2026-12-07 03:11:33.17605+00');
INSERT INTO public.outbox VALUES ('01a24e7c-8f71-76b5-ab30-a9a1aab36f29', '2138', 85, 'reservation.extended', 'acme', 'reservations/rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1', '{"id": "rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1", "end": "2026-12-09T05:11:00Z", "gpus": 1, "vcpu": 0, "start": "2026-12-09T03:11:00Z", "state": "booked", "diskGb": 0, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 2, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": ["GPU-demo-node-1-0"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24e7b-f605-768f-ab4e-e96ddf052f70", "priorityClass": "standard"}', '2026-12-07 03:11:55.754597+00');
INSERT INTO public.outbox VALUES ('01a24e7c-03c6-76ec-a64a-3386058c1404', '1836', 47, 'node_assignment.sent', NULL, 'node-commands/cmd_01a24e7c-01c4-786a-ac19-0a2ae57e4982', '{"id": "cmd_01a24e7c-01c4-786a-ac19-0a2ae57e4982", "kind": "assign", "state": "sent", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 2, "createdAt": "2026-12-07T03:11:19.426005Z", "journalId": "jnl_a769808b7d29249e80a31e89df9ca3c5", "retrySafe": true, "allocationId": "alc_01a24e7c-019e-73b4-ada2-608d17aaa34a", "sessionEpoch": 1, "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7c-019e-73b4-ada2-608d17aaa34a"}', '2026-12-07 03:11:19.989325+00');
INSERT INTO public.outbox VALUES ('01a24e7c-03e4-7194-8eee-c74a4b565ac5', '1843', 48, 'node_assignment.running', NULL, 'node-commands/cmd_01a24e7c-01c4-786a-ac19-0a2ae57e4982', '{"id": "cmd_01a24e7c-01c4-786a-ac19-0a2ae57e4982", "kind": "assign", "state": "running", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 3, "createdAt": "2026-12-07T03:11:19.426005Z", "retrySafe": true, "allocationId": "alc_01a24e7c-019e-73b4-ada2-608d17aaa34a", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7c-019e-73b4-ada2-608d17aaa34a"}', '2026-12-07 03:11:20.016471+00');
INSERT INTO public.outbox VALUES ('01a24e7c-0403-7a63-869e-9c5d750f1f36', '1846', 49, 'node_assignment.succeeded', NULL, 'node-commands/cmd_01a24e7c-01c4-786a-ac19-0a2ae57e4982', '{"id": "cmd_01a24e7c-01c4-786a-ac19-0a2ae57e4982", "kind": "assign", "state": "succeeded", "nodeId": "demo-node-1", "output": "assigned alc_01a24e7c-019e-73b4-ada2-608d17aaa34a: 1 devices (CUDA_VISIBLE_DEVICES=GPU-demo-node-1-2), 0 vCPU, 0 MiB, [2026-12-07T03:11:19Z, 2026-12-07T04:11:00Z)", "tenant": "acme", "payload": {}, "version": 4, "createdAt": "2026-12-07T03:11:19.426005Z", "retrySafe": true, "allocationId": "alc_01a24e7c-019e-73b4-ada2-608d17aaa34a", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7c-019e-73b4-ada2-608d17aaa34a"}', '2026-12-07 03:11:20.057978+00');
INSERT INTO public.outbox VALUES ('01a24e7c-37be-720f-8f61-e944ba9cc46c', '1965', 62, 'quota.set', 'acme', 'quotas/acme/vcpu', '{"max": 512, "tenant": "acme", "version": 2, "resource": "vcpu"}', '2026-12-07 03:11:33.275618+00');
INSERT INTO public.outbox VALUES ('01a24e7c-3b37-706a-9263-e6e99f3daeee', '1975', 64, 'reservation.booked', 'acme', 'reservations/rsv_01a24e7c-3a3a-760b-a030-d9839d315bdf', '{"id": "rsv_01a24e7c-3a3a-760b-a030-d9839d315bdf", "end": "2026-12-08T03:11:00Z", "gpus": 1, "vcpu": 0, "start": "2026-12-07T03:11:34.035509Z", "state": "booked", "diskGb": 0, "nodeId": "demo-node-3", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "slot", "version": 1, "gpuModel": "L4-24GB", "memoryMb": 0, "priority": 0, "slotKind": "time-slice", "deviceIds": ["GPU-demo-node-3-0/s1"], "conditions": [], "preemptible": false, "tolerations": ["dedicated=ml"], "allocationId": "alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73", "placedPoolId": "demo-pool", "priorityClass": "standard"}', '2026-12-07 03:11:34.035509+00');
INSERT INTO public.outbox VALUES ('01a24e7c-3b37-711e-9431-b4c240191550', '1975', 65, 'node_assignment.queued', NULL, 'node-commands/cmd_01a24e7c-3b37-70a3-b834-3d9442cda5fc', '{"id": "cmd_01a24e7c-3b37-70a3-b834-3d9442cda5fc", "kind": "assign", "state": "queued", "nodeId": "demo-node-3", "tenant": "acme", "payload": {}, "version": 1, "createdAt": "2026-12-07T03:11:34.035509Z", "retrySafe": true, "allocationId": "alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73"}', '2026-12-07 03:11:34.035509+00');
INSERT INTO public.outbox VALUES ('01a24e7c-4957-73bc-996e-2cd90d7d7fc4', '2015', 71, 'reservation.booked', 'acme', 'reservations/rsv_01a24e7c-4935-75ca-90fb-54a7efd68c5c', '{"id": "rsv_01a24e7c-4935-75ca-90fb-54a7efd68c5c", "end": "2026-12-08T03:11:00Z", "gpus": 1, "vcpu": 0, "start": "2026-12-07T03:11:37.784432Z", "state": "booked", "diskGb": 0, "nodeId": "demo-node-2", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "mig", "version": 1, "memoryMb": 0, "priority": -100, "deviceIds": ["GPU-demo-node-2-1/mig-2"], "conditions": [], "migProfile": "1g.10gb", "preemptible": true, "tolerations": [], "allocationId": "alc_01a24e7c-494f-7952-8d7d-57152f604d4e", "placedPoolId": "demo-pool", "priorityClass": "upg-batch"}', '2026-12-07 03:11:37.784432+00');
INSERT INTO public.outbox VALUES ('01a24e7c-4957-746d-b1cb-64891269b189', '2015', 72, 'node_assignment.queued', NULL, 'node-commands/cmd_01a24e7c-4957-73f5-839c-7100bf8a7ef4', '{"id": "cmd_01a24e7c-4957-73f5-839c-7100bf8a7ef4", "kind": "assign", "state": "queued", "nodeId": "demo-node-2", "tenant": "acme", "payload": {}, "version": 1, "createdAt": "2026-12-07T03:11:37.784432Z", "retrySafe": true, "allocationId": "alc_01a24e7c-494f-7952-8d7d-57152f604d4e", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7c-494f-7952-8d7d-57152f604d4e"}', '2026-12-07 03:11:37.784432+00');
INSERT INTO public.outbox VALUES ('01a24e7c-49fd-7ea9-b4b8-6828ff90c2d1', '2025', 74, 'reservation.activated', 'acme', 'reservations/rsv_01a24e7c-4935-75ca-90fb-54a7efd68c5c', '{"id": "rsv_01a24e7c-4935-75ca-90fb-54a7efd68c5c", "end": "2026-12-08T03:11:00Z", "gpus": 1, "vcpu": 0, "start": "2026-12-07T03:11:37.784432Z", "state": "active", "diskGb": 0, "nodeId": "demo-node-2", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "mig", "version": 2, "memoryMb": 0, "priority": -100, "deviceIds": ["GPU-demo-node-2-1/mig-2"], "conditions": [], "migProfile": "1g.10gb", "preemptible": true, "tolerations": [], "allocationId": "alc_01a24e7c-494f-7952-8d7d-57152f604d4e", "priorityClass": "upg-batch"}', '2026-12-07 03:11:37.967787+00');
INSERT INTO public.outbox VALUES ('01a24e7c-4a66-7c1d-9793-1a2175a967da', '2037', 76, 'node_assignment.succeeded', NULL, 'node-commands/cmd_01a24e7c-4957-73f5-839c-7100bf8a7ef4', '{"id": "cmd_01a24e7c-4957-73f5-839c-7100bf8a7ef4", "kind": "assign", "state": "succeeded", "nodeId": "demo-node-2", "output": "assigned alc_01a24e7c-494f-7952-8d7d-57152f604d4e: 1 devices (CUDA_VISIBLE_DEVICES=GPU-demo-node-2-1/mig-2), 0 vCPU, 0 MiB, [2026-12-07T03:11:37Z, 2026-12-08T03:11:00Z)", "tenant": "acme", "payload": {}, "version": 4, "createdAt": "2026-12-07T03:11:37.784432Z", "retrySafe": true, "allocationId": "alc_01a24e7c-494f-7952-8d7d-57152f604d4e", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7c-494f-7952-8d7d-57152f604d4e"}', '2026-12-07 03:11:38.079689+00');
INSERT INTO public.outbox VALUES ('01a24e7c-6b37-7444-b0b4-a7d8d9017c51', '2080', 77, 'instance.requested', 'acme', 'instances/ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1', '{"id": "ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1", "spec": {"command": "sleep 100000"}, "state": "requested", "nodeId": "demo-node-1", "tenant": "acme", "version": 1, "createdAt": "2026-12-07T03:11:46.455894Z", "updatedAt": "2026-12-07T03:11:46.455894Z", "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "reservationId": "rsv_01a24e7b-eab2-700c-bd50-30e24ff97714"}', '2026-12-07 03:11:46.455894+00');
INSERT INTO public.outbox VALUES ('01a24e7c-6b3c-7a95-a9cc-8067ea226b16', '2080', 78, 'node_command.queued', 'acme', 'node-commands/cmd_01a24e7c-6b38-7691-a66e-91084c5ebb64', '{"id": "cmd_01a24e7c-6b38-7691-a66e-91084c5ebb64", "kind": "instance-start", "state": "queued", "nodeId": "demo-node-1", "tenant": "acme", "payload": {"script": "sleep 100000"}, "version": 1, "createdAt": "2026-12-07T03:11:46.455894Z", "retrySafe": false, "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "minGeneration": 0, "idempotencyKey": "inst:ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1:instance-start"}', '2026-12-07 03:11:46.455894+00');
INSERT INTO public.outbox VALUES ('01a24e7c-4a51-7dc1-8663-c673af4952b0', '2030', 75, 'node_assignment.running', NULL, 'node-commands/cmd_01a24e7c-4957-73f5-839c-7100bf8a7ef4', '{"id": "cmd_01a24e7c-4957-73f5-839c-7100bf8a7ef4", "kind": "assign", "state": "running", "nodeId": "demo-node-2", "tenant": "acme", "payload": {}, "version": 3, "createdAt": "2026-12-07T03:11:37.784432Z", "retrySafe": true, "allocationId": "alc_01a24e7c-494f-7952-8d7d-57152f604d4e", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24e7c-494f-7952-8d7d-57152f604d4e"}', '2026-12-07 03:11:38.004845+00');
INSERT INTO public.outbox VALUES ('01a24e7c-6e40-70a8-837f-ba4cbd273063', '2097', 80, 'node_command.running', 'acme', 'node-commands/cmd_01a24e7c-6b38-7691-a66e-91084c5ebb64', '{"id": "cmd_01a24e7c-6b38-7691-a66e-91084c5ebb64", "kind": "instance-start", "state": "running", "nodeId": "demo-node-1", "tenant": "acme", "payload": {"script": "sleep 100000"}, "version": 3, "createdAt": "2026-12-07T03:11:46.455894Z", "retrySafe": false, "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "minGeneration": 0, "idempotencyKey": "inst:ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1:instance-start"}', '2026-12-07 03:11:47.082743+00');
INSERT INTO public.outbox VALUES ('01a24e7c-6e66-715f-8e9e-079fd4d13761', '2097', 81, 'instance.provisioning', 'acme', 'instances/ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1', '{"id": "ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1", "spec": {"command": "sleep 100000"}, "state": "provisioning", "nodeId": "demo-node-1", "tenant": "acme", "version": 2, "createdAt": "2026-12-07T03:11:46.455894Z", "updatedAt": "2026-12-07T03:11:46.455894Z", "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "reservationId": "rsv_01a24e7b-eab2-700c-bd50-30e24ff97714"}', '2026-12-07 03:11:47.082743+00');
INSERT INTO public.outbox VALUES ('01a24e7c-72f6-70d7-bedd-b48c902523d4', '2109', 82, 'node_command.succeeded', 'acme', 'node-commands/cmd_01a24e7c-6b38-7691-a66e-91084c5ebb64', '{"id": "cmd_01a24e7c-6b38-7691-a66e-91084c5ebb64", "kind": "instance-start", "state": "succeeded", "nodeId": "demo-node-1", "output": "instance ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1 started", "tenant": "acme", "payload": {"script": "sleep 100000"}, "version": 4, "createdAt": "2026-12-07T03:11:46.455894Z", "retrySafe": false, "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "minGeneration": 0, "idempotencyKey": "inst:ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1:instance-start"}', '2026-12-07 03:11:48.409352+00');
INSERT INTO public.outbox VALUES ('01a24e7c-7312-7796-868e-7670a0e4d6d1', '2109', 83, 'instance.running', 'acme', 'instances/ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1', '{"id": "ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1", "spec": {"command": "sleep 100000"}, "state": "running", "nodeId": "demo-node-1", "tenant": "acme", "version": 3, "createdAt": "2026-12-07T03:11:46.455894Z", "updatedAt": "2026-12-07T03:11:47.082743Z", "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "reservationId": "rsv_01a24e7b-eab2-700c-bd50-30e24ff97714"}', '2026-12-07 03:11:48.409352+00');
INSERT INTO public.outbox VALUES ('01a24e7c-6d63-7e1b-bea9-406070261b16', '2092', 79, 'node_command.sent', 'acme', 'node-commands/cmd_01a24e7c-6b38-7691-a66e-91084c5ebb64', '{"id": "cmd_01a24e7c-6b38-7691-a66e-91084c5ebb64", "kind": "instance-start", "state": "sent", "nodeId": "demo-node-1", "tenant": "acme", "payload": {"script": "sleep 100000"}, "version": 2, "createdAt": "2026-12-07T03:11:46.455894Z", "journalId": "jnl_a769808b7d29249e80a31e89df9ca3c5", "retrySafe": false, "allocationId": "alc_01a24e7b-eaef-7f3c-8d35-04821d222302", "sessionEpoch": 1, "minGeneration": 0, "idempotencyKey": "inst:ins_01a24e7c-6b23-7a2d-9e8f-4c5a08d737f1:instance-start"}', '2026-12-07 03:11:47.029689+00');


--
-- Data for Name: outbox_cursors; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.outbox_cursors VALUES ('webhooks', '2138', 85, '2026-12-07 03:11:55.768674+00');
INSERT INTO public.outbox_cursors VALUES ('reservations', '2138', 85, '2026-12-07 03:11:55.848027+00');
INSERT INTO public.outbox_cursors VALUES ('fleet', '2138', 85, '2026-12-07 03:11:55.848027+00');
INSERT INTO public.outbox_cursors VALUES ('device-holders', '2138', 85, '2026-12-07 03:11:55.848027+00');
INSERT INTO public.outbox_cursors VALUES ('usage-windows', '2138', 85, '2026-12-07 03:11:55.848027+00');


--
-- Data for Name: outbox_pruned; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: pending_queue_positions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pending_queue_positions VALUES ('rsv_01a24e7c-1c1c-78e6-8a6e-2aa6d8c99706', 'pool:demo-pool', 1, 1, 0.03909806367589743, 4, '2026-12-07 03:11:56.978587+00');


--
-- Data for Name: pool_capacity_rollup; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pool_capacity_rollup VALUES ('demo-pool', 'disk', 14000, 10);
INSERT INTO public.pool_capacity_rollup VALUES ('demo-pool', 'memory', 1835008, 8192);
INSERT INTO public.pool_capacity_rollup VALUES ('demo-pool', 'vcpu', 224, 4);


--
-- Data for Name: pools; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pools VALUES ('demo-pool', 'demo-site', 'bare-metal', NULL, 1, 1, 1, 1, '2026-12-07 03:10:58.349812+00', 'none');
INSERT INTO public.pools VALUES ('upg-ratio-pool', 'demo-site', 'vps-host', NULL, 2, 1.5, 1.25, 1, '2026-12-07 03:11:31.678675+00', 'none');


--
-- Data for Name: priority_classes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.priority_classes VALUES ('standard', 0, false, 30, 'The default class: never preempted.', true, 'migration', 1, '2026-12-07 03:10:57.725661+00');
INSERT INTO public.priority_classes VALUES ('upg-batch', -100, true, 60, 'upgrade', false, 'demo-operator', 1, '2026-12-07 03:11:32.425528+00');


--
-- Data for Name: quota_usage; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.quota_usage VALUES ('acme', 'disk', 10, 20000, 1);
INSERT INTO public.quota_usage VALUES ('acme', 'memory', 8192, 2097152, 1);
INSERT INTO public.quota_usage VALUES ('acme', 'vcpu', 4, 512, 2);
INSERT INTO public.quota_usage VALUES ('acme', 'gpu', 13, 64, 2);


--
-- Data for Name: reservation_preemptions; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: reservations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.reservations VALUES ('rsv_01a24e7b-eab2-700c-bd50-30e24ff97714', 'acme', 'demo-user', 'active', 'demo-pool', NULL, '{"gpu": {"kind": "gpu", "count": 2, "model": "H100-80GB"}, "vcpu": 4, "diskGb": 10, "memoryMb": 8192, "tolerations": []}', '["2026-12-07 03:11:13.60973+00","2026-12-08 03:11:00+00")', '{"gpu": 2, "disk": 10, "vcpu": 4, "memory": 8192}', '[]', 2, '2026-12-07 03:11:13.60973+00', '2026-12-07 03:11:13.978737+00', 'standard', 0, false, NULL, '1764');
INSERT INTO public.reservations VALUES ('rsv_01a24e7c-1c1c-78e6-8a6e-2aa6d8c99706', 'acme', 'demo-user', 'pending', 'demo-pool', NULL, '{"gpu": {"kind": "gpu", "count": 8, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}', '["2026-12-07 03:11:26.236941+00","2026-12-07 05:11:00+00")', '{"gpu": 8}', '[{"type": "Unschedulable", "reason": "NoNodeFits", "status": true, "message": "no node can take this reservation now: demo-node-1: 5 free H100-80GB GPUs in the window, needs 8; demo-node-2: 0 free H100-80GB GPUs in the window, needs 8; demo-node-3: 0 free H100-80GB GPUs in the window, needs 8"}]', 1, '2026-12-07 03:11:26.236941+00', '2026-12-07 03:11:26.236941+00', 'standard', 0, false, NULL, '1875');
INSERT INTO public.reservations VALUES ('rsv_01a24e7c-017e-7347-a620-28413c3db9d4', 'acme', 'demo-user', 'released', 'demo-pool', NULL, '{"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}', '["2026-12-07 03:11:19.426005+00","2026-12-07 04:11:00+00")', '{"gpu": 1}', '[]', 3, '2026-12-07 03:11:19.426005+00', '2026-12-07 03:11:31.307186+00', 'standard', 0, false, NULL, '1821');
INSERT INTO public.reservations VALUES ('rsv_01a24e7c-3a3a-760b-a030-d9839d315bdf', 'acme', 'demo-user', 'active', 'demo-pool', NULL, '{"gpu": {"kind": "slot", "count": 1, "model": "L4-24GB", "slotKind": "time-slice"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": ["dedicated=ml"]}', '["2026-12-07 03:11:34.035509+00","2026-12-08 03:11:00+00")', '{"gpu": 1}', '[]', 2, '2026-12-07 03:11:34.035509+00', '2026-12-07 03:11:34.987927+00', 'standard', 0, false, NULL, '1975');
INSERT INTO public.reservations VALUES ('rsv_01a24e7c-4935-75ca-90fb-54a7efd68c5c', 'acme', 'demo-user', 'active', 'demo-pool', NULL, '{"gpu": {"kind": "mig", "count": 1, "migProfile": "1g.10gb"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}', '["2026-12-07 03:11:37.784432+00","2026-12-08 03:11:00+00")', '{"gpu": 1}', '[]', 2, '2026-12-07 03:11:37.784432+00', '2026-12-07 03:11:37.967787+00', 'upg-batch', -100, true, NULL, '2015');
INSERT INTO public.reservations VALUES ('rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1', 'acme', 'demo-user', 'booked', 'demo-pool', NULL, '{"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}', '["2026-12-09 03:11:00+00","2026-12-09 05:11:00+00")', '{"gpu": 1}', '[]', 2, '2026-12-07 03:11:16.426023+00', '2026-12-07 03:11:55.754597+00', 'standard', 0, false, NULL, '1807');


--
-- Data for Name: rm_device_holders; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rm_device_holders VALUES ('GPU-demo-node-1-6', 'rsv_01a24e7b-eab2-700c-bd50-30e24ff97714', 'acme', 'demo-node-1', '["2026-12-07 03:11:13.60973+00","2026-12-08 03:11:00+00")', 2, '1777', 40);
INSERT INTO public.rm_device_holders VALUES ('GPU-demo-node-1-7', 'rsv_01a24e7b-eab2-700c-bd50-30e24ff97714', 'acme', 'demo-node-1', '["2026-12-07 03:11:13.60973+00","2026-12-08 03:11:00+00")', 2, '1777', 40);
INSERT INTO public.rm_device_holders VALUES ('GPU-demo-node-1-2', 'rsv_01a24e7c-017e-7347-a620-28413c3db9d4', 'acme', 'demo-node-1', '["2026-12-07 03:11:19.426005+00","2026-12-07 03:11:31.307186+00")', 3, '1898', 51);
INSERT INTO public.rm_device_holders VALUES ('GPU-demo-node-3-0/s1', 'rsv_01a24e7c-3a3a-760b-a030-d9839d315bdf', 'acme', 'demo-node-3', '["2026-12-07 03:11:34.035509+00","2026-12-08 03:11:00+00")', 2, '1987', 67);
INSERT INTO public.rm_device_holders VALUES ('GPU-demo-node-2-1/mig-2', 'rsv_01a24e7c-4935-75ca-90fb-54a7efd68c5c', 'acme', 'demo-node-2', '["2026-12-07 03:11:37.784432+00","2026-12-08 03:11:00+00")', 2, '2025', 74);
INSERT INTO public.rm_device_holders VALUES ('GPU-demo-node-1-0', 'rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1', 'acme', 'demo-node-1', '["2026-12-09 03:11:00+00","2026-12-09 05:11:00+00")', 2, '2138', 85);


--
-- Data for Name: rm_fleet_allocations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rm_fleet_allocations VALUES ('rsv_01a24e7b-eab2-700c-bd50-30e24ff97714', 'acme', 'demo-node-1', 'demo-pool', '{GPU-demo-node-1-6,GPU-demo-node-1-7}', 4, 8192, 10, true, 2);
INSERT INTO public.rm_fleet_allocations VALUES ('rsv_01a24e7c-017e-7347-a620-28413c3db9d4', 'acme', 'demo-node-1', 'demo-pool', '{GPU-demo-node-1-2}', 0, 0, 0, false, 3);
INSERT INTO public.rm_fleet_allocations VALUES ('rsv_01a24e7c-3a3a-760b-a030-d9839d315bdf', 'acme', 'demo-node-3', 'demo-pool', '{GPU-demo-node-3-0/s1}', 0, 0, 0, true, 2);
INSERT INTO public.rm_fleet_allocations VALUES ('rsv_01a24e7c-4935-75ca-90fb-54a7efd68c5c', 'acme', 'demo-node-2', 'demo-pool', '{GPU-demo-node-2-1/mig-2}', 0, 0, 0, true, 2);
INSERT INTO public.rm_fleet_allocations VALUES ('rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1', 'acme', 'demo-node-1', 'demo-pool', '{GPU-demo-node-1-0}', 0, 0, 0, true, 2);


--
-- Data for Name: rm_fleet_devices; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-0', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-1', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-2', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-3', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-4', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-5', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-6', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-7', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-0', 'demo-node-2', 'demo-pool', NULL, 'gpu', 'A100-80GB', 'mig', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-0/mig-0', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-0', 'mig', 'A100-80GB', NULL, '3g.40gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-0/mig-1', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-0', 'mig', 'A100-80GB', NULL, '2g.20gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-0/mig-2', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-0', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-0/mig-3', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-0', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-1', 'demo-node-2', 'demo-pool', NULL, 'gpu', 'A100-80GB', 'mig', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-1/mig-0', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-1', 'mig', 'A100-80GB', NULL, '3g.40gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-1/mig-1', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-1', 'mig', 'A100-80GB', NULL, '2g.20gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-1/mig-2', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-1', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-1/mig-3', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-1', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-2', 'demo-node-2', 'demo-pool', NULL, 'gpu', 'A100-80GB', 'mig', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-2/mig-0', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-2', 'mig', 'A100-80GB', NULL, '3g.40gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-2/mig-1', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-2', 'mig', 'A100-80GB', NULL, '2g.20gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-2/mig-2', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-2', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-2/mig-3', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-2', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-3', 'demo-node-2', 'demo-pool', NULL, 'gpu', 'A100-80GB', 'mig', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-3/mig-0', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-3', 'mig', 'A100-80GB', NULL, '3g.40gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-3/mig-1', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-3', 'mig', 'A100-80GB', NULL, '2g.20gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-3/mig-2', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-3', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-3/mig-3', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-3', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-0', 'demo-node-3', 'demo-pool', NULL, 'gpu', 'L4-24GB', 'time-slice', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-0/s0', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-0', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-0/s1', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-0', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-0/s2', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-0', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-0/s3', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-0', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-1', 'demo-node-3', 'demo-pool', NULL, 'gpu', 'L4-24GB', 'time-slice', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-1/s0', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-1', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-1/s1', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-1', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-1/s2', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-1', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-1/s3', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-1', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-2', 'demo-node-3', 'demo-pool', NULL, 'gpu', 'L4-24GB', 'time-slice', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-2/s0', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-2', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-2/s1', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-2', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-2/s2', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-2', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-2/s3', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-2', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-3', 'demo-node-3', 'demo-pool', NULL, 'gpu', 'L4-24GB', 'time-slice', NULL, false, 'healthy', false, 1, 1, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-3/s0', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-3', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-3/s1', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-3', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-3/s2', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-3', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-3/s3', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-3', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1, 0, 0);


--
-- Data for Name: rm_fleet_nodes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rm_fleet_nodes VALUES ('demo-node-2', 'demo-pool', false, '{}', 64, 524288, 4000, 2, '2026-12-07 03:10:58.537047+00', '2026-12-07 03:11:00.353014+00', '1673', 30, 'connected', '{}', '[]', 1, 2, 2, 2);
INSERT INTO public.rm_fleet_nodes VALUES ('demo-node-1', 'demo-pool', false, '{}', 128, 1048576, 8000, 2, '2026-12-07 03:10:58.357563+00', '2026-12-07 03:11:00.428017+00', '1675', 31, 'connected', '{}', '[]', 1, 2, 2, 2);
INSERT INTO public.rm_fleet_nodes VALUES ('demo-node-3', 'demo-pool', false, '{dedicated=ml}', 32, 262144, 2000, 3, '2026-12-07 03:10:58.627465+00', '2026-12-07 03:11:31.980867+00', '1913', 54, 'connected', '{}', '[]', 3, 2, 2, 2);


--
-- Data for Name: rm_fleet_pools; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rm_fleet_pools VALUES ('demo-pool', 'demo-site', 'bare-metal', 1, 1, 1, 1, 'none');
INSERT INTO public.rm_fleet_pools VALUES ('upg-ratio-pool', 'demo-site', 'vps-host', 2, 1.5, 1.25, 1, 'none');


--
-- Data for Name: rm_reservations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rm_reservations VALUES ('rsv_01a24e7b-eab2-700c-bd50-30e24ff97714', 'acme', 'active', 'demo-pool', NULL, 'demo-node-1', '{GPU-demo-node-1-6,GPU-demo-node-1-7}', '2026-12-07 03:11:13.60973+00', '2026-12-08 03:11:00+00', '{}', '[]', 2, '1764', 35, '1777', 40, '2026-12-07 03:11:13.60973+00', '2026-12-07 03:11:13.978737+00', 'standard', 0, false, '{"gpu": {"kind": "gpu", "count": 2, "model": "H100-80GB"}, "vcpu": 4, "diskGb": 10, "memoryMb": 8192, "tolerations": []}');
INSERT INTO public.rm_reservations VALUES ('rsv_01a24e7c-1c1c-78e6-8a6e-2aa6d8c99706', 'acme', 'pending', 'demo-pool', NULL, NULL, '{}', '2026-12-07 03:11:26.236941+00', '2026-12-07 05:11:00+00', '{}', '[{"type": "Unschedulable", "reason": "NoNodeFits", "status": true, "message": "no node can take this reservation now: demo-node-1: 5 free H100-80GB GPUs in the window, needs 8; demo-node-2: 0 free H100-80GB GPUs in the window, needs 8; demo-node-3: 0 free H100-80GB GPUs in the window, needs 8"}]', 1, '1875', 50, '1875', 50, '2026-12-07 03:11:26.236941+00', '2026-12-07 03:11:26.236941+00', 'standard', 0, false, '{"gpu": {"kind": "gpu", "count": 8, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}');
INSERT INTO public.rm_reservations VALUES ('rsv_01a24e7c-017e-7347-a620-28413c3db9d4', 'acme', 'released', 'demo-pool', NULL, 'demo-node-1', '{GPU-demo-node-1-2}', '2026-12-07 03:11:19.426005+00', '2026-12-07 04:11:00+00', '{}', '[]', 3, '1821', 44, '1898', 51, '2026-12-07 03:11:19.426005+00', '2026-12-07 03:11:31.307186+00', 'standard', 0, false, '{"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}');
INSERT INTO public.rm_reservations VALUES ('rsv_01a24e7c-3a3a-760b-a030-d9839d315bdf', 'acme', 'active', 'demo-pool', NULL, 'demo-node-3', '{GPU-demo-node-3-0/s1}', '2026-12-07 03:11:34.035509+00', '2026-12-08 03:11:00+00', '{dedicated=ml}', '[]', 2, '1975', 64, '1987', 67, '2026-12-07 03:11:34.035509+00', '2026-12-07 03:11:34.987927+00', 'standard', 0, false, '{"gpu": {"kind": "slot", "count": 1, "model": "L4-24GB", "slotKind": "time-slice"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": ["dedicated=ml"]}');
INSERT INTO public.rm_reservations VALUES ('rsv_01a24e7c-4935-75ca-90fb-54a7efd68c5c', 'acme', 'active', 'demo-pool', NULL, 'demo-node-2', '{GPU-demo-node-2-1/mig-2}', '2026-12-07 03:11:37.784432+00', '2026-12-08 03:11:00+00', '{}', '[]', 2, '2015', 71, '2025', 74, '2026-12-07 03:11:37.784432+00', '2026-12-07 03:11:37.967787+00', 'upg-batch', -100, true, '{"gpu": {"kind": "mig", "count": 1, "migProfile": "1g.10gb"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}');
INSERT INTO public.rm_reservations VALUES ('rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1', 'acme', 'booked', 'demo-pool', NULL, 'demo-node-1', '{GPU-demo-node-1-0}', '2026-12-09 03:11:00+00', '2026-12-09 05:11:00+00', '{}', '[]', 2, '1807', 42, '2138', 85, '2026-12-07 03:11:16.426023+00', '2026-12-07 03:11:55.754597+00', 'standard', 0, false, '{"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}');


--
-- Data for Name: rm_usage_allocations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rm_usage_allocations VALUES ('rsv_01a24e7b-eab2-700c-bd50-30e24ff97714', 'alc_01a24e7b-eaef-7f3c-8d35-04821d222302', 'acme', 'demo-pool', 'demo-node-1', 2, 4, 8192, 10, '2026-12-07 03:11:13.60973+00', '2026-12-08 03:11:00+00', false, 2, 'gpu', 'H100-80GB', '', '');
INSERT INTO public.rm_usage_allocations VALUES ('rsv_01a24e7c-017e-7347-a620-28413c3db9d4', 'alc_01a24e7c-019e-73b4-ada2-608d17aaa34a', 'acme', 'demo-pool', 'demo-node-1', 1, 0, 0, 0, '2026-12-07 03:11:19.426005+00', '2026-12-07 03:11:31.307186+00', true, 3, 'gpu', 'H100-80GB', '', '');
INSERT INTO public.rm_usage_allocations VALUES ('rsv_01a24e7c-3a3a-760b-a030-d9839d315bdf', 'alc_01a24e7c-3af5-7545-aac2-9e9d31f34e73', 'acme', 'demo-pool', 'demo-node-3', 1, 0, 0, 0, '2026-12-07 03:11:34.035509+00', '2026-12-08 03:11:00+00', false, 2, 'slot', 'L4-24GB', '', 'time-slice');
INSERT INTO public.rm_usage_allocations VALUES ('rsv_01a24e7c-4935-75ca-90fb-54a7efd68c5c', 'alc_01a24e7c-494f-7952-8d7d-57152f604d4e', 'acme', 'demo-pool', 'demo-node-2', 1, 0, 0, 0, '2026-12-07 03:11:37.784432+00', '2026-12-08 03:11:00+00', false, 2, 'mig', '', '1g.10gb', '');
INSERT INTO public.rm_usage_allocations VALUES ('rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1', 'alc_01a24e7b-f605-768f-ab4e-e96ddf052f70', 'acme', 'demo-pool', 'demo-node-1', 1, 0, 0, 0, '2026-12-09 03:11:00+00', '2026-12-09 05:11:00+00', false, 2, 'gpu', 'H100-80GB', '', '');


--
-- Data for Name: sites; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.sites VALUES ('demo-site', 'Demo site', 1, '2026-12-07 03:10:58.345857+00');


--
-- Data for Name: stream_tickets; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: tenant_fair_share_settled; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.tenant_fair_share_settled VALUES (604800, 'ops', 0, 0);
INSERT INTO public.tenant_fair_share_settled VALUES (604800, 'acme', 0, 0);


--
-- Data for Name: tenant_fair_shares; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.tenant_fair_shares VALUES ('acme', 4, 1, '2026-12-07 03:11:32.889096+00');


--
-- Data for Name: tenant_priority_class_sets; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.tenant_priority_class_sets VALUES ('acme', 1, '2026-12-07 03:11:32.626353+00');


--
-- Data for Name: tenant_priority_classes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.tenant_priority_classes VALUES ('acme', 'upg-batch');


--
-- Data for Name: tenants; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.tenants VALUES ('ops', '2026-12-07 03:10:58.757907+00');
INSERT INTO public.tenants VALUES ('acme', '2026-12-07 03:10:58.786283+00');


--
-- Data for Name: webhook_attempts; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.webhook_attempts VALUES (1, '45481448-17a8-4149-9490-5f50e32a5036', 'we_8c0ce326ff5eab5341c307a6', '01a24e7b-d7ad-7801-8cf4-bdc00874fa64', 1, 204, 18, '', NULL, '2026-12-07 03:11:09.153228+00');
INSERT INTO public.webhook_attempts VALUES (2, 'f32803e3-aacd-42ce-9312-60f28fcc6c85', 'we_8c0ce326ff5eab5341c307a6', '01a24e7b-eb38-740a-a13e-3f9e469a73b8', 1, 204, 19, '', NULL, '2026-12-07 03:11:13.929265+00');
INSERT INTO public.webhook_attempts VALUES (3, 'cf528955-14df-46bd-8624-98f6db85ea4b', 'we_8c0ce326ff5eab5341c307a6', '01a24e7b-eca3-7960-9f72-0679b9be971b', 1, 204, 27, '', NULL, '2026-12-07 03:11:14.385278+00');
INSERT INTO public.webhook_attempts VALUES (4, '4e5f6f7d-7436-4c94-bdd1-a79cd5662e85', 'we_8c0ce326ff5eab5341c307a6', '01a24e7b-f662-7758-8db6-07af1ae313a2', 1, 204, 19, '', NULL, '2026-12-07 03:11:16.844004+00');
INSERT INTO public.webhook_attempts VALUES (5, '48eea7cc-9e8b-4f28-89e9-1633dbc673c7', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-01c4-782e-a68e-b2da2ee1719f', 1, 204, 15, '', NULL, '2026-12-07 03:11:19.599445+00');
INSERT INTO public.webhook_attempts VALUES (6, 'd9baf623-b2e2-4850-89a4-462fe3663427', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-03a9-7256-9687-abf9a8c7c199', 1, 204, 1, '', NULL, '2026-12-07 03:11:20.038267+00');
INSERT INTO public.webhook_attempts VALUES (7, 'fa6d968c-de26-4909-acae-75b3d10e4970', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-1c36-7d1e-8524-d3324d3201ca', 1, 204, 5, '', NULL, '2026-12-07 03:11:26.384016+00');
INSERT INTO public.webhook_attempts VALUES (8, '46b56ef1-e4fb-4d4e-83ce-b9db4fd93835', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-2fed-7292-8509-f6fedb68aba2', 1, 204, 1, '', NULL, '2026-12-07 03:11:31.509693+00');
INSERT INTO public.webhook_attempts VALUES (9, '10fa3aba-a35f-4e45-b0c0-e7f488f25cb2', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-3532-7b5d-b8dd-3bce2aac7bb6', 1, 204, 9, '', NULL, '2026-12-07 03:11:32.735574+00');
INSERT INTO public.webhook_attempts VALUES (10, '852b6250-4551-42bb-8286-3d317dffd643', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-361d-7aaa-8310-46270c9c6c2b', 1, 204, 11, '', NULL, '2026-12-07 03:11:33.017852+00');
INSERT INTO public.webhook_attempts VALUES (11, 'db0148ea-3459-430c-ab47-a91f69e6cb5c', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-3739-7b22-a244-d6b72a6f968b', 1, 204, 5, '', NULL, '2026-12-07 03:11:33.237395+00');
INSERT INTO public.webhook_attempts VALUES (12, '1c3f9fbe-b703-4cd4-9f5a-f953e4c561d1', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-37be-720f-8f61-e944ba9cc46c', 1, 204, 4, '', NULL, '2026-12-07 03:11:33.491619+00');
INSERT INTO public.webhook_attempts VALUES (13, '0c7c0428-c934-43b3-871c-749441ee87ac', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-3b37-706a-9263-e6e99f3daeee', 1, 204, 11, '', NULL, '2026-12-07 03:11:34.417033+00');
INSERT INTO public.webhook_attempts VALUES (14, 'e09bcde6-579d-46b4-be72-ba0ee0069185', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-3e72-7cd2-9a7e-aea546810d2c', 1, 204, 46, '', NULL, '2026-12-07 03:11:35.14392+00');
INSERT INTO public.webhook_attempts VALUES (15, '1873557b-b8ec-4c39-aa8a-763834d1e627', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-4957-73bc-996e-2cd90d7d7fc4', 1, 204, 1, '', NULL, '2026-12-07 03:11:38.134721+00');
INSERT INTO public.webhook_attempts VALUES (16, 'befe7b60-33d3-43df-87d5-648823c87b8f', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-49fd-7ea9-b4b8-6828ff90c2d1', 1, 204, 1, '', NULL, '2026-12-07 03:11:38.154041+00');
INSERT INTO public.webhook_attempts VALUES (17, 'd022520e-713b-40fe-977c-9772a2c46cc8', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-6b3c-7a95-a9cc-8067ea226b16', 1, 204, 4, '', NULL, '2026-12-07 03:11:46.545586+00');
INSERT INTO public.webhook_attempts VALUES (18, '53d1ba16-a26d-432f-ac60-30689845814f', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-6b37-7444-b0b4-a7d8d9017c51', 1, 204, 5, '', NULL, '2026-12-07 03:11:46.547574+00');
INSERT INTO public.webhook_attempts VALUES (19, 'b45a9383-1767-4191-b350-23d811d9c640', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-6d63-7e1b-bea9-406070261b16', 1, 204, 17, '', NULL, '2026-12-07 03:11:47.268546+00');
INSERT INTO public.webhook_attempts VALUES (20, '0f90c101-7e05-4016-bffd-d9de80e1a9be', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-6e40-70a8-837f-ba4cbd273063', 1, 204, 3, '', NULL, '2026-12-07 03:11:47.468772+00');
INSERT INTO public.webhook_attempts VALUES (21, '77273c52-4bc9-43c3-a37c-f1dcff874c26', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-6e66-715f-8e9e-079fd4d13761', 1, 204, 2, '', NULL, '2026-12-07 03:11:47.483584+00');
INSERT INTO public.webhook_attempts VALUES (23, 'bd2dcc14-64f3-48c9-88d7-d3d756b7df8d', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-7312-7796-868e-7670a0e4d6d1', 1, 204, 4, '', NULL, '2026-12-07 03:11:48.571492+00');
INSERT INTO public.webhook_attempts VALUES (22, '2e295c53-8597-4d2e-9a0a-7476904e78a1', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-72f6-70d7-bedd-b48c902523d4', 1, 204, 5, '', NULL, '2026-12-07 03:11:48.570635+00');
INSERT INTO public.webhook_attempts VALUES (24, 'b6c40da4-a862-4d16-8726-a58572bd9a47', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-8f71-76b5-ab30-a9a1aab36f29', 1, 204, 1, '', NULL, '2026-12-07 03:11:55.777907+00');


--
-- Data for Name: webhook_deliveries; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.webhook_deliveries VALUES ('45481448-17a8-4149-9490-5f50e32a5036', 'we_8c0ce326ff5eab5341c307a6', '01a24e7b-d7ad-7801-8cf4-bdc00874fa64', 'succeeded', 1, '2026-12-07 03:11:09.153228+00', 204, NULL, '2026-12-07 03:11:08.797562+00', '2026-12-07 03:11:09.153228+00');
INSERT INTO public.webhook_deliveries VALUES ('f32803e3-aacd-42ce-9312-60f28fcc6c85', 'we_8c0ce326ff5eab5341c307a6', '01a24e7b-eb38-740a-a13e-3f9e469a73b8', 'succeeded', 1, '2026-12-07 03:11:13.929265+00', 204, NULL, '2026-12-07 03:11:13.797028+00', '2026-12-07 03:11:13.929265+00');
INSERT INTO public.webhook_deliveries VALUES ('cf528955-14df-46bd-8624-98f6db85ea4b', 'we_8c0ce326ff5eab5341c307a6', '01a24e7b-eca3-7960-9f72-0679b9be971b', 'succeeded', 1, '2026-12-07 03:11:14.385278+00', 204, NULL, '2026-12-07 03:11:14.217358+00', '2026-12-07 03:11:14.385278+00');
INSERT INTO public.webhook_deliveries VALUES ('4e5f6f7d-7436-4c94-bdd1-a79cd5662e85', 'we_8c0ce326ff5eab5341c307a6', '01a24e7b-f662-7758-8db6-07af1ae313a2', 'succeeded', 1, '2026-12-07 03:11:16.844004+00', 204, NULL, '2026-12-07 03:11:16.636465+00', '2026-12-07 03:11:16.844004+00');
INSERT INTO public.webhook_deliveries VALUES ('48eea7cc-9e8b-4f28-89e9-1633dbc673c7', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-01c4-782e-a68e-b2da2ee1719f', 'succeeded', 1, '2026-12-07 03:11:19.599445+00', 204, NULL, '2026-12-07 03:11:19.506357+00', '2026-12-07 03:11:19.599445+00');
INSERT INTO public.webhook_deliveries VALUES ('d9baf623-b2e2-4850-89a4-462fe3663427', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-03a9-7256-9687-abf9a8c7c199', 'succeeded', 1, '2026-12-07 03:11:20.038267+00', 204, NULL, '2026-12-07 03:11:19.989854+00', '2026-12-07 03:11:20.038267+00');
INSERT INTO public.webhook_deliveries VALUES ('fa6d968c-de26-4909-acae-75b3d10e4970', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-1c36-7d1e-8524-d3324d3201ca', 'succeeded', 1, '2026-12-07 03:11:26.384016+00', 204, NULL, '2026-12-07 03:11:26.299441+00', '2026-12-07 03:11:26.384016+00');
INSERT INTO public.webhook_deliveries VALUES ('46b56ef1-e4fb-4d4e-83ce-b9db4fd93835', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-2fed-7292-8509-f6fedb68aba2', 'succeeded', 1, '2026-12-07 03:11:31.509693+00', 204, NULL, '2026-12-07 03:11:31.396274+00', '2026-12-07 03:11:31.509693+00');
INSERT INTO public.webhook_deliveries VALUES ('10fa3aba-a35f-4e45-b0c0-e7f488f25cb2', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-3532-7b5d-b8dd-3bce2aac7bb6', 'succeeded', 1, '2026-12-07 03:11:32.735574+00', 204, NULL, '2026-12-07 03:11:32.663715+00', '2026-12-07 03:11:32.735574+00');
INSERT INTO public.webhook_deliveries VALUES ('852b6250-4551-42bb-8286-3d317dffd643', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-361d-7aaa-8310-46270c9c6c2b', 'succeeded', 1, '2026-12-07 03:11:33.017852+00', 204, NULL, '2026-12-07 03:11:32.919809+00', '2026-12-07 03:11:33.017852+00');
INSERT INTO public.webhook_deliveries VALUES ('db0148ea-3459-430c-ab47-a91f69e6cb5c', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-3739-7b22-a244-d6b72a6f968b', 'succeeded', 1, '2026-12-07 03:11:33.237395+00', 204, NULL, '2026-12-07 03:11:33.181283+00', '2026-12-07 03:11:33.237395+00');
INSERT INTO public.webhook_deliveries VALUES ('1c3f9fbe-b703-4cd4-9f5a-f953e4c561d1', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-37be-720f-8f61-e944ba9cc46c', 'succeeded', 1, '2026-12-07 03:11:33.491619+00', 204, NULL, '2026-12-07 03:11:33.362372+00', '2026-12-07 03:11:33.491619+00');
INSERT INTO public.webhook_deliveries VALUES ('0c7c0428-c934-43b3-871c-749441ee87ac', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-3b37-706a-9263-e6e99f3daeee', 'succeeded', 1, '2026-12-07 03:11:34.417033+00', 204, NULL, '2026-12-07 03:11:34.285533+00', '2026-12-07 03:11:34.417033+00');
INSERT INTO public.webhook_deliveries VALUES ('e09bcde6-579d-46b4-be72-ba0ee0069185', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-3e72-7cd2-9a7e-aea546810d2c', 'succeeded', 1, '2026-12-07 03:11:35.14392+00', 204, NULL, '2026-12-07 03:11:35.048419+00', '2026-12-07 03:11:35.14392+00');
INSERT INTO public.webhook_deliveries VALUES ('1873557b-b8ec-4c39-aa8a-763834d1e627', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-4957-73bc-996e-2cd90d7d7fc4', 'succeeded', 1, '2026-12-07 03:11:38.134721+00', 204, NULL, '2026-12-07 03:11:37.851822+00', '2026-12-07 03:11:38.134721+00');
INSERT INTO public.webhook_deliveries VALUES ('befe7b60-33d3-43df-87d5-648823c87b8f', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-49fd-7ea9-b4b8-6828ff90c2d1', 'succeeded', 1, '2026-12-07 03:11:38.154041+00', 204, NULL, '2026-12-07 03:11:38.041261+00', '2026-12-07 03:11:38.154041+00');
INSERT INTO public.webhook_deliveries VALUES ('d022520e-713b-40fe-977c-9772a2c46cc8', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-6b3c-7a95-a9cc-8067ea226b16', 'succeeded', 1, '2026-12-07 03:11:46.545586+00', 204, NULL, '2026-12-07 03:11:46.50569+00', '2026-12-07 03:11:46.545586+00');
INSERT INTO public.webhook_deliveries VALUES ('53d1ba16-a26d-432f-ac60-30689845814f', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-6b37-7444-b0b4-a7d8d9017c51', 'succeeded', 1, '2026-12-07 03:11:46.547574+00', 204, NULL, '2026-12-07 03:11:46.50569+00', '2026-12-07 03:11:46.547574+00');
INSERT INTO public.webhook_deliveries VALUES ('b45a9383-1767-4191-b350-23d811d9c640', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-6d63-7e1b-bea9-406070261b16', 'succeeded', 1, '2026-12-07 03:11:47.268546+00', 204, NULL, '2026-12-07 03:11:47.082957+00', '2026-12-07 03:11:47.268546+00');
INSERT INTO public.webhook_deliveries VALUES ('0f90c101-7e05-4016-bffd-d9de80e1a9be', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-6e40-70a8-837f-ba4cbd273063', 'succeeded', 1, '2026-12-07 03:11:47.468772+00', 204, NULL, '2026-12-07 03:11:47.359434+00', '2026-12-07 03:11:47.468772+00');
INSERT INTO public.webhook_deliveries VALUES ('77273c52-4bc9-43c3-a37c-f1dcff874c26', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-6e66-715f-8e9e-079fd4d13761', 'succeeded', 1, '2026-12-07 03:11:47.483584+00', 204, NULL, '2026-12-07 03:11:47.359434+00', '2026-12-07 03:11:47.483584+00');
INSERT INTO public.webhook_deliveries VALUES ('bd2dcc14-64f3-48c9-88d7-d3d756b7df8d', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-7312-7796-868e-7670a0e4d6d1', 'succeeded', 1, '2026-12-07 03:11:48.571492+00', 204, NULL, '2026-12-07 03:11:48.528268+00', '2026-12-07 03:11:48.571492+00');
INSERT INTO public.webhook_deliveries VALUES ('2e295c53-8597-4d2e-9a0a-7476904e78a1', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-72f6-70d7-bedd-b48c902523d4', 'succeeded', 1, '2026-12-07 03:11:48.570635+00', 204, NULL, '2026-12-07 03:11:48.528268+00', '2026-12-07 03:11:48.570635+00');
INSERT INTO public.webhook_deliveries VALUES ('b6c40da4-a862-4d16-8726-a58572bd9a47', 'we_8c0ce326ff5eab5341c307a6', '01a24e7c-8f71-76b5-ab30-a9a1aab36f29', 'succeeded', 1, '2026-12-07 03:11:55.777907+00', 204, NULL, '2026-12-07 03:11:55.768674+00', '2026-12-07 03:11:55.777907+00');


--
-- Data for Name: webhook_endpoints; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.webhook_endpoints VALUES ('we_8c0ce326ff5eab5341c307a6', 'acme', 'http://127.0.0.1:18132/hook', '{}', 'upgrade', 'whsec_+54qx5WwMw0JBhS2hbjurCqltSJC9yrjaE9ZECKk0Bs=', NULL, NULL, true, NULL, NULL, 1, '2026-12-07 03:11:08.688212+00', '2026-12-07 03:11:08.688212+00', 0, 0, NULL, NULL, '1729');


--
-- Data for Name: webhook_inflight; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: work_queue; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.work_queue VALUES ('reservation.expire', 'rsv_01a24e7c-017e-7347-a620-28413c3db9d4', 4, 1, '2026-12-07 04:11:00+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.resync', 'reservations', 14, 1, '2026-12-07 03:15:59.347558+00', NULL, NULL, 1, NULL);
INSERT INTO public.work_queue VALUES ('fair-share.fold', 'all', 4, 1, '2026-12-07 03:15:59.547462+00', NULL, NULL, 1, NULL);
INSERT INTO public.work_queue VALUES ('retention.prune', 'all', 4, 1, '2026-12-07 03:21:00.117759+00', NULL, NULL, 1, NULL);
INSERT INTO public.work_queue VALUES ('node.resync', 'demo-node-2', 10, 1, '2026-12-07 03:16:00.353014+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('node.resync', 'demo-node-1', 7, 1, '2026-12-07 03:16:00.428017+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.expire', 'rsv_01a24e7c-3a3a-760b-a030-d9839d315bdf', 11, 1, '2026-12-08 03:11:00+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.expire', 'rsv_01a24e7c-1c1c-78e6-8a6e-2aa6d8c99706', 2, 1, '2026-12-07 05:11:00+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.expire', 'rsv_01a24e7b-eab2-700c-bd50-30e24ff97714', 14, 1, '2026-12-08 03:11:00+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.activate', 'rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1', 12, 1, '2026-12-09 03:11:00+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.expire', 'rsv_01a24e7c-4935-75ca-90fb-54a7efd68c5c', 15, 1, '2026-12-08 03:11:00+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('node.resync', 'demo-node-3', 13, 2, '2026-12-07 03:16:33.073251+00', NULL, NULL, 1, NULL);
INSERT INTO public.work_queue VALUES ('node.liveness-sweep', 'fleet', 15, 1, '2026-12-07 03:12:00.747383+00', NULL, NULL, 12, NULL);
INSERT INTO public.work_queue VALUES ('reservation.expire', 'rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1', 12, 1, '2026-12-09 05:11:00+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.queue', 'pool:demo-pool', 13, 1, '2026-12-07 03:11:56.236941+00', '2026-12-07 03:12:56.975953+00', 'vm-7685-96ee6215', 1, NULL);


--
-- Name: authz_changes_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.authz_changes_seq_seq', 5, true);


--
-- Name: device_bookings_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.device_bookings_id_seq', 7, true);


--
-- Name: goose_db_version_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.goose_db_version_id_seq', 54, true);


--
-- Name: node_commands_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.node_commands_seq_seq', 6, true);


--
-- Name: outbox_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.outbox_seq_seq', 85, true);


--
-- Name: webhook_attempts_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.webhook_attempts_id_seq', 24, true);


--
-- Name: allocations allocations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.allocations
    ADD CONSTRAINT allocations_pkey PRIMARY KEY (id);


--
-- Name: api_tokens api_tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_pkey PRIMARY KEY (id);


--
-- Name: api_tokens api_tokens_token_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_token_hash_key UNIQUE (token_hash);


--
-- Name: authz_changes authz_changes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.authz_changes
    ADD CONSTRAINT authz_changes_pkey PRIMARY KEY (txid, seq);


--
-- Name: billing_deliveries billing_deliveries_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.billing_deliveries
    ADD CONSTRAINT billing_deliveries_pkey PRIMARY KEY (key);


--
-- Name: compute_sim_clock compute_sim_clock_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.compute_sim_clock
    ADD CONSTRAINT compute_sim_clock_pkey PRIMARY KEY (id);


--
-- Name: device_bookings device_bookings_no_overlap; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_bookings
    ADD CONSTRAINT device_bookings_no_overlap EXCLUDE USING gist (device_id WITH =, during WITH &&);


--
-- Name: device_bookings device_bookings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_bookings
    ADD CONSTRAINT device_bookings_pkey PRIMARY KEY (id);


--
-- Name: devices devices_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_pkey PRIMARY KEY (id);


--
-- Name: fair_share_folds fair_share_folds_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.fair_share_folds
    ADD CONSTRAINT fair_share_folds_pkey PRIMARY KEY (half_life_seconds);


--
-- Name: goose_db_version goose_db_version_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.goose_db_version
    ADD CONSTRAINT goose_db_version_pkey PRIMARY KEY (id);


--
-- Name: goose_lock goose_lock_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.goose_lock
    ADD CONSTRAINT goose_lock_pkey PRIMARY KEY (lock_id);


--
-- Name: idempotency_keys idempotency_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (tenant_id, identity, key);


--
-- Name: instances instances_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.instances
    ADD CONSTRAINT instances_pkey PRIMARY KEY (id);


--
-- Name: leases leases_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.leases
    ADD CONSTRAINT leases_pkey PRIMARY KEY (name);


--
-- Name: node_commands node_commands_node_tenant_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_commands
    ADD CONSTRAINT node_commands_node_tenant_key UNIQUE (node_id, tenant_id, idempotency_key);


--
-- Name: node_commands node_commands_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_commands
    ADD CONSTRAINT node_commands_pkey PRIMARY KEY (id);


--
-- Name: node_credentials node_credentials_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_credentials
    ADD CONSTRAINT node_credentials_pkey PRIMARY KEY (id);


--
-- Name: node_credentials node_credentials_token_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_credentials
    ADD CONSTRAINT node_credentials_token_hash_key UNIQUE (token_hash);


--
-- Name: node_desired node_desired_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_desired
    ADD CONSTRAINT node_desired_pkey PRIMARY KEY (node_id);


--
-- Name: node_join_tokens node_join_tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_join_tokens
    ADD CONSTRAINT node_join_tokens_pkey PRIMARY KEY (id);


--
-- Name: node_join_tokens node_join_tokens_token_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_join_tokens
    ADD CONSTRAINT node_join_tokens_token_hash_key UNIQUE (token_hash);


--
-- Name: node_liveness_sweeps node_liveness_sweeps_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_liveness_sweeps
    ADD CONSTRAINT node_liveness_sweeps_pkey PRIMARY KEY (id);


--
-- Name: node_resources node_resources_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_resources
    ADD CONSTRAINT node_resources_pkey PRIMARY KEY (node_id, resource);


--
-- Name: node_session_credentials node_session_credentials_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_session_credentials
    ADD CONSTRAINT node_session_credentials_pkey PRIMARY KEY (node_id);


--
-- Name: node_sessions node_sessions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_sessions
    ADD CONSTRAINT node_sessions_pkey PRIMARY KEY (node_id);


--
-- Name: nodes nodes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.nodes
    ADD CONSTRAINT nodes_pkey PRIMARY KEY (id);


--
-- Name: outbox_cursors outbox_cursors_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_cursors
    ADD CONSTRAINT outbox_cursors_pkey PRIMARY KEY (sink);


--
-- Name: outbox outbox_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox
    ADD CONSTRAINT outbox_pkey PRIMARY KEY (id);


--
-- Name: outbox_pruned outbox_pruned_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_pruned
    ADD CONSTRAINT outbox_pruned_pkey PRIMARY KEY (singleton);


--
-- Name: pending_queue_positions pending_queue_positions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.pending_queue_positions
    ADD CONSTRAINT pending_queue_positions_pkey PRIMARY KEY (reservation_id);


--
-- Name: pool_capacity_rollup pool_capacity_rollup_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.pool_capacity_rollup
    ADD CONSTRAINT pool_capacity_rollup_pkey PRIMARY KEY (pool_id, resource);


--
-- Name: pools pools_id_site; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.pools
    ADD CONSTRAINT pools_id_site UNIQUE (id, site_id);


--
-- Name: pools pools_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.pools
    ADD CONSTRAINT pools_pkey PRIMARY KEY (id);


--
-- Name: priority_classes priority_classes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.priority_classes
    ADD CONSTRAINT priority_classes_pkey PRIMARY KEY (name);


--
-- Name: quota_usage quota_usage_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.quota_usage
    ADD CONSTRAINT quota_usage_pkey PRIMARY KEY (tenant_id, resource);


--
-- Name: reservation_preemptions reservation_preemptions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reservation_preemptions
    ADD CONSTRAINT reservation_preemptions_pkey PRIMARY KEY (victim_id);


--
-- Name: reservations reservations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reservations
    ADD CONSTRAINT reservations_pkey PRIMARY KEY (id);


--
-- Name: rm_device_holders rm_device_holders_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rm_device_holders
    ADD CONSTRAINT rm_device_holders_pkey PRIMARY KEY (device_id, reservation_id);


--
-- Name: rm_fleet_allocations rm_fleet_allocations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rm_fleet_allocations
    ADD CONSTRAINT rm_fleet_allocations_pkey PRIMARY KEY (reservation_id);


--
-- Name: rm_fleet_devices rm_fleet_devices_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rm_fleet_devices
    ADD CONSTRAINT rm_fleet_devices_pkey PRIMARY KEY (id);


--
-- Name: rm_fleet_nodes rm_fleet_nodes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rm_fleet_nodes
    ADD CONSTRAINT rm_fleet_nodes_pkey PRIMARY KEY (id);


--
-- Name: rm_fleet_pools rm_fleet_pools_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rm_fleet_pools
    ADD CONSTRAINT rm_fleet_pools_pkey PRIMARY KEY (id);


--
-- Name: rm_reservations rm_reservations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rm_reservations
    ADD CONSTRAINT rm_reservations_pkey PRIMARY KEY (id);


--
-- Name: rm_usage_allocations rm_usage_allocations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rm_usage_allocations
    ADD CONSTRAINT rm_usage_allocations_pkey PRIMARY KEY (reservation_id);


--
-- Name: rm_usage_windows rm_usage_windows_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rm_usage_windows
    ADD CONSTRAINT rm_usage_windows_pkey PRIMARY KEY (key);


--
-- Name: sites sites_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.sites
    ADD CONSTRAINT sites_pkey PRIMARY KEY (id);


--
-- Name: stream_tickets stream_tickets_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.stream_tickets
    ADD CONSTRAINT stream_tickets_pkey PRIMARY KEY (ticket_hash);


--
-- Name: tenant_fair_share_settled tenant_fair_share_settled_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tenant_fair_share_settled
    ADD CONSTRAINT tenant_fair_share_settled_pkey PRIMARY KEY (half_life_seconds, tenant_id);


--
-- Name: tenant_fair_shares tenant_fair_shares_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tenant_fair_shares
    ADD CONSTRAINT tenant_fair_shares_pkey PRIMARY KEY (tenant_id);


--
-- Name: tenant_priority_class_sets tenant_priority_class_sets_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tenant_priority_class_sets
    ADD CONSTRAINT tenant_priority_class_sets_pkey PRIMARY KEY (tenant_id);


--
-- Name: tenant_priority_classes tenant_priority_classes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tenant_priority_classes
    ADD CONSTRAINT tenant_priority_classes_pkey PRIMARY KEY (tenant_id, class);


--
-- Name: tenants tenants_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tenants
    ADD CONSTRAINT tenants_pkey PRIMARY KEY (id);


--
-- Name: webhook_attempts webhook_attempts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_attempts
    ADD CONSTRAINT webhook_attempts_pkey PRIMARY KEY (id);


--
-- Name: webhook_deliveries webhook_deliveries_endpoint_id_event_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_endpoint_id_event_id_key UNIQUE (endpoint_id, event_id);


--
-- Name: webhook_deliveries webhook_deliveries_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id);


--
-- Name: webhook_endpoints webhook_endpoints_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (id);


--
-- Name: webhook_inflight webhook_inflight_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_inflight
    ADD CONSTRAINT webhook_inflight_pkey PRIMARY KEY (delivery_id);


--
-- Name: work_queue work_queue_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.work_queue
    ADD CONSTRAINT work_queue_pkey PRIMARY KEY (kind, key);


--
-- Name: allocations_live_node; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX allocations_live_node ON public.allocations USING btree (node_id) WHERE (released_at IS NULL);


--
-- Name: allocations_released; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX allocations_released ON public.allocations USING btree (released_at) WHERE (released_at IS NOT NULL);


--
-- Name: allocations_reservation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX allocations_reservation ON public.allocations USING btree (reservation_id);


--
-- Name: api_tokens_issued_by; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX api_tokens_issued_by ON public.api_tokens USING btree (issued_by) WHERE (issued_by IS NOT NULL);


--
-- Name: api_tokens_tenant; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX api_tokens_tenant ON public.api_tokens USING btree (tenant_id, id);


--
-- Name: billing_deliveries_accepted; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX billing_deliveries_accepted ON public.billing_deliveries USING btree (delivered_at) WHERE (delivered_at IS NOT NULL);


--
-- Name: billing_deliveries_undelivered; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX billing_deliveries_undelivered ON public.billing_deliveries USING btree (next_attempt_at) WHERE (delivered_at IS NULL);


--
-- Name: device_bookings_allocation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_bookings_allocation ON public.device_bookings USING btree (allocation_id);


--
-- Name: device_bookings_device_end; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_bookings_device_end ON public.device_bookings USING btree (device_id COLLATE "C", COALESCE(upper(during), 'infinity'::timestamp with time zone));


--
-- Name: devices_node; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX devices_node ON public.devices USING btree (node_id, id);


--
-- Name: devices_parent; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX devices_parent ON public.devices USING btree (parent_id, id);


--
-- Name: idempotency_keys_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX idempotency_keys_expiry ON public.idempotency_keys USING btree (expires_at);


--
-- Name: instances_allocation_unfinished; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX instances_allocation_unfinished ON public.instances USING btree (allocation_id) WHERE (state = ANY (ARRAY['requested'::text, 'provisioning'::text, 'running'::text, 'stopping'::text]));


--
-- Name: instances_ended; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX instances_ended ON public.instances USING btree (updated_at) WHERE (state = ANY (ARRAY['stopped'::text, 'failed'::text, 'succeeded'::text]));


--
-- Name: instances_reservation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX instances_reservation ON public.instances USING btree (reservation_id, id);


--
-- Name: node_commands_assignments; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX node_commands_assignments ON public.node_commands USING btree (node_id, allocation_id, seq) WHERE (kind = ANY (ARRAY['assign'::text, 'unassign'::text]));


--
-- Name: node_commands_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX node_commands_created ON public.node_commands USING btree (created_at);


--
-- Name: node_commands_instance; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX node_commands_instance ON public.node_commands USING btree (instance_id) WHERE (instance_id IS NOT NULL);


--
-- Name: node_commands_open; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX node_commands_open ON public.node_commands USING btree (node_id, created_at) WHERE (state = ANY (ARRAY['queued'::text, 'sent'::text, 'running'::text]));


--
-- Name: node_credentials_node; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX node_credentials_node ON public.node_credentials USING btree (node_id, created_at);


--
-- Name: node_join_tokens_issued_by; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX node_join_tokens_issued_by ON public.node_join_tokens USING btree (issued_by) WHERE ((issued_by IS NOT NULL) AND (used_at IS NULL) AND (revoked_at IS NULL));


--
-- Name: node_join_tokens_node; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX node_join_tokens_node ON public.node_join_tokens USING btree (node_id, created_at);


--
-- Name: node_session_credentials_credential; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX node_session_credentials_credential ON public.node_session_credentials USING btree (credential_id);


--
-- Name: node_sessions_connected_gateway; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX node_sessions_connected_gateway ON public.node_sessions USING btree (gateway_id) WHERE connected;


--
-- Name: nodes_pool; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX nodes_pool ON public.nodes USING btree (pool_id, id);


--
-- Name: nodes_pool_place; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX nodes_pool_place ON public.nodes USING btree (pool_id, hashtext(id), id);


--
-- Name: nodes_site_place; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX nodes_site_place ON public.nodes USING btree (site_id, hashtext(id), id);


--
-- Name: outbox_position; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX outbox_position ON public.outbox USING btree (txid, seq);


--
-- Name: outbox_tenant_position; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_tenant_position ON public.outbox USING btree (tenant_id, txid, seq);


--
-- Name: outbox_tenant_type_position; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_tenant_type_position ON public.outbox USING btree (tenant_id, type, txid, seq);


--
-- Name: pending_queue_positions_scope; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX pending_queue_positions_scope ON public.pending_queue_positions USING btree (scope);


--
-- Name: pools_site; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX pools_site ON public.pools USING btree (site_id, id);


--
-- Name: priority_classes_one_default; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX priority_classes_one_default ON public.priority_classes USING btree ((true)) WHERE is_default;


--
-- Name: reservation_preemptions_preemptor; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX reservation_preemptions_preemptor ON public.reservation_preemptions USING btree (preemptor_id);


--
-- Name: reservations_held_tenant; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX reservations_held_tenant ON public.reservations USING btree (tenant_id) WHERE (state = ANY (ARRAY['booked'::text, 'active'::text]));


--
-- Name: reservations_live; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX reservations_live ON public.reservations USING btree (state) WHERE (state = ANY (ARRAY['pending'::text, 'booked'::text, 'active'::text]));


--
-- Name: reservations_pending_pool; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX reservations_pending_pool ON public.reservations USING btree (pool_id, created_at) WHERE (state = 'pending'::text);


--
-- Name: reservations_pending_site; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX reservations_pending_site ON public.reservations USING btree (site_id, created_at) WHERE (state = 'pending'::text);


--
-- Name: reservations_pending_tenant; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX reservations_pending_tenant ON public.reservations USING btree (tenant_id) WHERE (state = 'pending'::text);


--
-- Name: reservations_tenant_end; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX reservations_tenant_end ON public.reservations USING btree (tenant_id, upper(during));


--
-- Name: rm_device_holders_during; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_device_holders_during ON public.rm_device_holders USING gist (device_id, during);


--
-- Name: rm_device_holders_reservation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_device_holders_reservation ON public.rm_device_holders USING btree (reservation_id);


--
-- Name: rm_fleet_allocations_live_node; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_fleet_allocations_live_node ON public.rm_fleet_allocations USING btree (node_id) WHERE live;


--
-- Name: rm_fleet_devices_node; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_fleet_devices_node ON public.rm_fleet_devices USING btree (node_id, id);


--
-- Name: rm_fleet_devices_parent; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_fleet_devices_parent ON public.rm_fleet_devices USING btree (parent_id, id);


--
-- Name: rm_fleet_nodes_pool; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_fleet_nodes_pool ON public.rm_fleet_nodes USING btree (pool_id, id);


--
-- Name: rm_reservations_created; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX rm_reservations_created ON public.rm_reservations USING btree (created_txid, created_seq);


--
-- Name: rm_reservations_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_reservations_state ON public.rm_reservations USING btree (state, created_txid, created_seq);


--
-- Name: rm_reservations_tenant; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_reservations_tenant ON public.rm_reservations USING btree (tenant_id, created_txid, created_seq);


--
-- Name: rm_reservations_tenant_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_reservations_tenant_state ON public.rm_reservations USING btree (tenant_id, state, created_txid, created_seq);


--
-- Name: rm_usage_windows_allocation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_usage_windows_allocation ON public.rm_usage_windows USING btree (allocation_id);


--
-- Name: rm_usage_windows_order; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_usage_windows_order ON public.rm_usage_windows USING btree (window_start, key);


--
-- Name: rm_usage_windows_reservation_order; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_usage_windows_reservation_order ON public.rm_usage_windows USING btree (reservation_id, window_start, key);


--
-- Name: rm_usage_windows_tenant; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_usage_windows_tenant ON public.rm_usage_windows USING btree (tenant_id, window_start, key);


--
-- Name: stream_tickets_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX stream_tickets_expiry ON public.stream_tickets USING btree (expires_at);


--
-- Name: webhook_attempts_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_attempts_at ON public.webhook_attempts USING btree (at);


--
-- Name: webhook_attempts_delivery; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_attempts_delivery ON public.webhook_attempts USING btree (delivery_id);


--
-- Name: webhook_attempts_endpoint; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_attempts_endpoint ON public.webhook_attempts USING btree (endpoint_id, id DESC);


--
-- Name: webhook_deliveries_finished; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_deliveries_finished ON public.webhook_deliveries USING btree (updated_at) WHERE (state <> 'pending'::text);


--
-- Name: webhook_deliveries_pending_event; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_deliveries_pending_event ON public.webhook_deliveries USING btree (event_id) WHERE (state = 'pending'::text);


--
-- Name: webhook_endpoints_tenant; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_endpoints_tenant ON public.webhook_endpoints USING btree (tenant_id, id);


--
-- Name: webhook_inflight_endpoint; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_inflight_endpoint ON public.webhook_inflight USING btree (endpoint_id, until);


--
-- Name: webhook_inflight_tenant; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_inflight_tenant ON public.webhook_inflight USING btree (tenant_id, until);


--
-- Name: work_queue_due_by_kind; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX work_queue_due_by_kind ON public.work_queue USING btree (kind, shard, not_before);


--
-- Name: allocations allocations_node_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.allocations
    ADD CONSTRAINT allocations_node_id_fkey FOREIGN KEY (node_id) REFERENCES public.nodes(id);


--
-- Name: allocations allocations_reservation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.allocations
    ADD CONSTRAINT allocations_reservation_id_fkey FOREIGN KEY (reservation_id) REFERENCES public.reservations(id) DEFERRABLE INITIALLY DEFERRED;


--
-- Name: api_tokens api_tokens_issued_by_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_issued_by_fkey FOREIGN KEY (issued_by) REFERENCES public.api_tokens(id);


--
-- Name: api_tokens api_tokens_tenant_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id);


--
-- Name: device_bookings device_bookings_device_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_bookings
    ADD CONSTRAINT device_bookings_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id);


--
-- Name: devices devices_node_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_node_id_fkey FOREIGN KEY (node_id) REFERENCES public.nodes(id);


--
-- Name: devices devices_parent_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_parent_id_fkey FOREIGN KEY (parent_id) REFERENCES public.devices(id);


--
-- Name: instances instances_allocation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.instances
    ADD CONSTRAINT instances_allocation_id_fkey FOREIGN KEY (allocation_id) REFERENCES public.allocations(id);


--
-- Name: instances instances_node_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.instances
    ADD CONSTRAINT instances_node_id_fkey FOREIGN KEY (node_id) REFERENCES public.nodes(id);


--
-- Name: instances instances_reservation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.instances
    ADD CONSTRAINT instances_reservation_id_fkey FOREIGN KEY (reservation_id) REFERENCES public.reservations(id);


--
-- Name: node_commands node_commands_allocation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_commands
    ADD CONSTRAINT node_commands_allocation_id_fkey FOREIGN KEY (allocation_id) REFERENCES public.allocations(id);


--
-- Name: node_commands node_commands_instance_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_commands
    ADD CONSTRAINT node_commands_instance_id_fkey FOREIGN KEY (instance_id) REFERENCES public.instances(id);


--
-- Name: node_commands node_commands_node_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_commands
    ADD CONSTRAINT node_commands_node_id_fkey FOREIGN KEY (node_id) REFERENCES public.nodes(id);


--
-- Name: node_credentials node_credentials_node_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_credentials
    ADD CONSTRAINT node_credentials_node_id_fkey FOREIGN KEY (node_id) REFERENCES public.nodes(id);


--
-- Name: node_desired node_desired_node_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_desired
    ADD CONSTRAINT node_desired_node_id_fkey FOREIGN KEY (node_id) REFERENCES public.nodes(id);


--
-- Name: node_join_tokens node_join_tokens_credential_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_join_tokens
    ADD CONSTRAINT node_join_tokens_credential_id_fkey FOREIGN KEY (credential_id) REFERENCES public.node_credentials(id);


--
-- Name: node_join_tokens node_join_tokens_issued_by_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_join_tokens
    ADD CONSTRAINT node_join_tokens_issued_by_fkey FOREIGN KEY (issued_by) REFERENCES public.api_tokens(id);


--
-- Name: node_resources node_resources_node_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_resources
    ADD CONSTRAINT node_resources_node_id_fkey FOREIGN KEY (node_id) REFERENCES public.nodes(id);


--
-- Name: node_session_credentials node_session_credentials_credential_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_session_credentials
    ADD CONSTRAINT node_session_credentials_credential_id_fkey FOREIGN KEY (credential_id) REFERENCES public.node_credentials(id);


--
-- Name: node_session_credentials node_session_credentials_node_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_session_credentials
    ADD CONSTRAINT node_session_credentials_node_id_fkey FOREIGN KEY (node_id) REFERENCES public.nodes(id);


--
-- Name: node_sessions node_sessions_node_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.node_sessions
    ADD CONSTRAINT node_sessions_node_id_fkey FOREIGN KEY (node_id) REFERENCES public.nodes(id);


--
-- Name: nodes nodes_pool_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.nodes
    ADD CONSTRAINT nodes_pool_id_fkey FOREIGN KEY (pool_id) REFERENCES public.pools(id);


--
-- Name: nodes nodes_pool_site; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.nodes
    ADD CONSTRAINT nodes_pool_site FOREIGN KEY (pool_id, site_id) REFERENCES public.pools(id, site_id);


--
-- Name: pending_queue_positions pending_queue_positions_reservation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.pending_queue_positions
    ADD CONSTRAINT pending_queue_positions_reservation_id_fkey FOREIGN KEY (reservation_id) REFERENCES public.reservations(id);


--
-- Name: pool_capacity_rollup pool_capacity_rollup_pool_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.pool_capacity_rollup
    ADD CONSTRAINT pool_capacity_rollup_pool_id_fkey FOREIGN KEY (pool_id) REFERENCES public.pools(id);


--
-- Name: pools pools_site_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.pools
    ADD CONSTRAINT pools_site_id_fkey FOREIGN KEY (site_id) REFERENCES public.sites(id);


--
-- Name: quota_usage quota_usage_tenant_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.quota_usage
    ADD CONSTRAINT quota_usage_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id);


--
-- Name: reservation_preemptions reservation_preemptions_preemptor_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reservation_preemptions
    ADD CONSTRAINT reservation_preemptions_preemptor_id_fkey FOREIGN KEY (preemptor_id) REFERENCES public.reservations(id) DEFERRABLE INITIALLY DEFERRED;


--
-- Name: reservation_preemptions reservation_preemptions_victim_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reservation_preemptions
    ADD CONSTRAINT reservation_preemptions_victim_id_fkey FOREIGN KEY (victim_id) REFERENCES public.reservations(id);


--
-- Name: reservations reservations_pool_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reservations
    ADD CONSTRAINT reservations_pool_id_fkey FOREIGN KEY (pool_id) REFERENCES public.pools(id);


--
-- Name: reservations reservations_site_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reservations
    ADD CONSTRAINT reservations_site_id_fkey FOREIGN KEY (site_id) REFERENCES public.sites(id);


--
-- Name: reservations reservations_tenant_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reservations
    ADD CONSTRAINT reservations_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id);


--
-- Name: stream_tickets stream_tickets_tenant_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.stream_tickets
    ADD CONSTRAINT stream_tickets_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id);


--
-- Name: stream_tickets stream_tickets_token_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.stream_tickets
    ADD CONSTRAINT stream_tickets_token_id_fkey FOREIGN KEY (token_id) REFERENCES public.api_tokens(id);


--
-- Name: tenant_fair_share_settled tenant_fair_share_settled_half_life_seconds_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tenant_fair_share_settled
    ADD CONSTRAINT tenant_fair_share_settled_half_life_seconds_fkey FOREIGN KEY (half_life_seconds) REFERENCES public.fair_share_folds(half_life_seconds) ON DELETE CASCADE;


--
-- Name: tenant_fair_share_settled tenant_fair_share_settled_tenant_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tenant_fair_share_settled
    ADD CONSTRAINT tenant_fair_share_settled_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id);


--
-- Name: tenant_fair_shares tenant_fair_shares_tenant_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tenant_fair_shares
    ADD CONSTRAINT tenant_fair_shares_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id);


--
-- Name: tenant_priority_class_sets tenant_priority_class_sets_tenant_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tenant_priority_class_sets
    ADD CONSTRAINT tenant_priority_class_sets_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id);


--
-- Name: tenant_priority_classes tenant_priority_classes_class_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tenant_priority_classes
    ADD CONSTRAINT tenant_priority_classes_class_fkey FOREIGN KEY (class) REFERENCES public.priority_classes(name);


--
-- Name: tenant_priority_classes tenant_priority_classes_tenant_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tenant_priority_classes
    ADD CONSTRAINT tenant_priority_classes_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenant_priority_class_sets(tenant_id);


--
-- Name: webhook_attempts webhook_attempts_delivery_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_attempts
    ADD CONSTRAINT webhook_attempts_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES public.webhook_deliveries(id) ON DELETE CASCADE;


--
-- Name: webhook_attempts webhook_attempts_endpoint_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_attempts
    ADD CONSTRAINT webhook_attempts_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES public.webhook_endpoints(id) ON DELETE CASCADE;


--
-- Name: webhook_deliveries webhook_deliveries_endpoint_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES public.webhook_endpoints(id) ON DELETE CASCADE;


--
-- Name: webhook_endpoints webhook_endpoints_tenant_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id);


--
-- Name: webhook_inflight webhook_inflight_delivery_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_inflight
    ADD CONSTRAINT webhook_inflight_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES public.webhook_deliveries(id) ON DELETE CASCADE;


--
-- Name: webhook_inflight webhook_inflight_endpoint_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_inflight
    ADD CONSTRAINT webhook_inflight_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES public.webhook_endpoints(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--


