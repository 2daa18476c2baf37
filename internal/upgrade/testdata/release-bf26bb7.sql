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
-- Name: fair_share_usage(text[], double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.fair_share_usage(tenants text[], half_life_seconds double precision) RETURNS TABLE(tenant_id text, gpu_hours double precision)
    LANGUAGE sql STABLE
    AS $$
  WITH c AS (SELECT compute_now() AS now, half_life_seconds AS h),
  held AS (
    SELECT r.tenant_id, cardinality(a.device_ids) AS atoms,
           greatest(lower(r.during), a.created_at) AS s,
           least(coalesce(a.released_at, 'infinity'::timestamptz), upper(r.during), c.now) AS e,
           c.now, c.h
      FROM c
      JOIN reservations r ON r.tenant_id = ANY(tenants)
                         AND upper(r.during) > c.now - make_interval(secs => 10 * c.h)
      JOIN allocations a ON a.reservation_id = r.id
     WHERE coalesce(a.released_at, 'infinity'::timestamptz) > c.now - make_interval(secs => 10 * c.h)
  ), used AS (
    SELECT held.tenant_id,
           sum(held.atoms * held.h / 3600 / ln(2) *
               (power(2::float8, -least(extract(epoch FROM held.now - held.e)::float8 / held.h, 1000)) -
                power(2::float8, -least(extract(epoch FROM held.now - held.s)::float8 / held.h, 1000)))) AS gpu_hours
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
    CONSTRAINT node_sessions_check CHECK (((NOT connected) OR ((gateway_id IS NOT NULL) AND (gateway_epoch IS NOT NULL) AND (session_epoch > 0)))),
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
    CONSTRAINT reservations_check CHECK (((pool_id IS NULL) <> (site_id IS NULL))),
    CONSTRAINT reservations_during_check CHECK (((NOT isempty(during)) AND (NOT lower_inf(during)) AND (NOT upper_inf(during)))),
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
    version bigint NOT NULL
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

INSERT INTO public.allocations VALUES ('alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657', 'rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171', 'demo-node-1', '{GPU-demo-node-1-2,GPU-demo-node-1-3}', 4, 8192, 10, NULL, '2026-12-06 08:18:36.352452+00');
INSERT INTO public.allocations VALUES ('alc_01a24a6e-f930-7478-9345-2d014d51cfba', 'rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4', 'demo-node-1', '{GPU-demo-node-1-6}', 0, 0, 0, NULL, '2026-12-06 08:18:36.457693+00');
INSERT INTO public.allocations VALUES ('alc_01a24a6e-f9ac-79b4-ac5e-75b0416f6f00', 'rsv_01a24a6e-f9a2-781b-8a5a-5ff9d26e2a26', 'demo-node-1', '{GPU-demo-node-1-6}', 0, 0, 0, NULL, '2026-12-06 08:18:36.581965+00');
INSERT INTO public.allocations VALUES ('alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7', 'rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11', 'demo-node-1', '{GPU-demo-node-1-7}', 0, 0, 0, NULL, '2026-12-06 08:18:39.8584+00');
INSERT INTO public.allocations VALUES ('alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03', 'rsv_01a24a6e-f959-7444-a522-b4cb947e7f89', 'demo-node-1', '{GPU-demo-node-1-5}', 0, 0, 0, '2026-12-06 08:18:40.82212+00', '2026-12-06 08:18:36.506803+00');


--
-- Data for Name: api_tokens; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.api_tokens VALUES ('tok_e536fc21a39dedbfda414a98', '\x8627a841af095428c9ecf66dcee91f6ecadc29297331b4d2dc2869ad1e090eb3', 'ops', 'demo-operator', 'operator', '2026-12-06 08:18:07.089924+00', NULL);
INSERT INTO public.api_tokens VALUES ('tok_4a921e03bba651d2757f778d', '\x53a86d12a17c45147c146fca0d041568daba17e8b946db23b3e5cf58290e138f', 'acme', 'demo-user', 'member', '2026-12-06 08:18:07.092124+00', NULL);
INSERT INTO public.api_tokens VALUES ('tok_e344644c0409e4a9e8a897d8', '\xa267fb8fa734f827951651fe01c19edb82bad6f8f2441387ea75a7b3eec943d9', 'ops', 'bob', 'operator', '2026-12-06 08:18:25.127661+00', NULL);
INSERT INTO public.api_tokens VALUES ('tok_761779bc9331d2e665a80aa3', '\x2d2939b20d384cfbfcb323fa5a436bb434bc21137f885339d9037930ff1d4edb', 'acme', 'carol', 'member', '2026-12-06 08:18:27.655428+00', NULL);


--
-- Data for Name: authz_changes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.authz_changes VALUES ('768', 1, 'tok_e536fc21a39dedbfda414a98', 'created', '2026-12-06 08:18:07.089924+00');
INSERT INTO public.authz_changes VALUES ('769', 2, 'tok_4a921e03bba651d2757f778d', 'created', '2026-12-06 08:18:07.092124+00');
INSERT INTO public.authz_changes VALUES ('896', 3, 'tok_e344644c0409e4a9e8a897d8', 'created', '2026-12-06 08:18:25.127661+00');
INSERT INTO public.authz_changes VALUES ('905', 4, 'tok_761779bc9331d2e665a80aa3', 'created', '2026-12-06 08:18:27.655428+00');


--
-- Data for Name: billing_deliveries; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: compute_sim_clock; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: device_bookings; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.device_bookings OVERRIDING SYSTEM VALUE VALUES (1, 'GPU-demo-node-1-2', 'alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657', '["2026-12-06 08:18:36.352452+00","2026-12-07 08:18:36+00")', 33);
INSERT INTO public.device_bookings OVERRIDING SYSTEM VALUE VALUES (2, 'GPU-demo-node-1-3', 'alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657', '["2026-12-06 08:18:36.352452+00","2026-12-07 08:18:36+00")', 34);
INSERT INTO public.device_bookings OVERRIDING SYSTEM VALUE VALUES (3, 'GPU-demo-node-1-6', 'alc_01a24a6e-f930-7478-9345-2d014d51cfba', '["2026-12-08 08:18:36+00","2026-12-08 09:18:36+00")', 37);
INSERT INTO public.device_bookings OVERRIDING SYSTEM VALUE VALUES (5, 'GPU-demo-node-1-6', 'alc_01a24a6e-f9ac-79b4-ac5e-75b0416f6f00', '["2026-12-09 08:18:36+00","2029-02-13 08:18:36+00")', 42);
INSERT INTO public.device_bookings OVERRIDING SYSTEM VALUE VALUES (6, 'GPU-demo-node-1-7', 'alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7', '["2026-12-06 08:18:39.8584+00","2028-11-05 08:18:39+00")', 53);
INSERT INTO public.device_bookings OVERRIDING SYSTEM VALUE VALUES (4, 'GPU-demo-node-1-5', 'alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03', '["2026-12-06 08:18:36.506803+00","2026-12-06 08:18:40.82212+00")', 39);
INSERT INTO public.device_bookings OVERRIDING SYSTEM VALUE VALUES (7, 'GPU-demo-node-1-6', 'alc_01a24a6e-f930-7478-9345-2d014d51cfba', '["2026-12-08 09:18:36+00","2026-12-08 10:18:36+00")', 72);


--
-- Data for Name: devices; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.devices VALUES ('GPU-demo-node-1-0', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-06 08:18:07.050444+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-1-1', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-06 08:18:07.050444+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-1-2', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-06 08:18:07.050444+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-1-3', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-06 08:18:07.050444+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-1-4', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-06 08:18:07.050444+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-1-5', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-06 08:18:07.050444+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-1-6', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-06 08:18:07.050444+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-1-7', NULL, 'demo-node-1', 'gpu', 'H100-80GB', 81920, 'exclusive', NULL, true, false, 'healthy', false, 1, '2026-12-06 08:18:07.050444+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-0', NULL, 'demo-node-2', 'gpu', 'A100-80GB', 81920, 'mig', NULL, false, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-0/mig-0', 'GPU-demo-node-2-0', 'demo-node-2', 'mig', 'A100-80GB', 40960, NULL, '3g.40gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-0/mig-1', 'GPU-demo-node-2-0', 'demo-node-2', 'mig', 'A100-80GB', 20480, NULL, '2g.20gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-0/mig-2', 'GPU-demo-node-2-0', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-0/mig-3', 'GPU-demo-node-2-0', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-1', NULL, 'demo-node-2', 'gpu', 'A100-80GB', 81920, 'mig', NULL, false, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-1/mig-0', 'GPU-demo-node-2-1', 'demo-node-2', 'mig', 'A100-80GB', 40960, NULL, '3g.40gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-1/mig-1', 'GPU-demo-node-2-1', 'demo-node-2', 'mig', 'A100-80GB', 20480, NULL, '2g.20gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-1/mig-2', 'GPU-demo-node-2-1', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-1/mig-3', 'GPU-demo-node-2-1', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-2', NULL, 'demo-node-2', 'gpu', 'A100-80GB', 81920, 'mig', NULL, false, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-2/mig-0', 'GPU-demo-node-2-2', 'demo-node-2', 'mig', 'A100-80GB', 40960, NULL, '3g.40gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-2/mig-1', 'GPU-demo-node-2-2', 'demo-node-2', 'mig', 'A100-80GB', 20480, NULL, '2g.20gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-2/mig-2', 'GPU-demo-node-2-2', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-2/mig-3', 'GPU-demo-node-2-2', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-3', NULL, 'demo-node-2', 'gpu', 'A100-80GB', 81920, 'mig', NULL, false, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-3/mig-0', 'GPU-demo-node-2-3', 'demo-node-2', 'mig', 'A100-80GB', 40960, NULL, '3g.40gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-3/mig-1', 'GPU-demo-node-2-3', 'demo-node-2', 'mig', 'A100-80GB', 20480, NULL, '2g.20gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-3/mig-2', 'GPU-demo-node-2-3', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-2-3/mig-3', 'GPU-demo-node-2-3', 'demo-node-2', 'mig', 'A100-80GB', 10240, NULL, '1g.10gb', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.062007+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-0', NULL, 'demo-node-3', 'gpu', 'L4-24GB', 24576, 'time-slice', NULL, false, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-0/s0', 'GPU-demo-node-3-0', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-0/s1', 'GPU-demo-node-3-0', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-0/s2', 'GPU-demo-node-3-0', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-0/s3', 'GPU-demo-node-3-0', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-1', NULL, 'demo-node-3', 'gpu', 'L4-24GB', 24576, 'time-slice', NULL, false, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-1/s0', 'GPU-demo-node-3-1', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-1/s1', 'GPU-demo-node-3-1', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-1/s2', 'GPU-demo-node-3-1', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-1/s3', 'GPU-demo-node-3-1', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-2', NULL, 'demo-node-3', 'gpu', 'L4-24GB', 24576, 'time-slice', NULL, false, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-2/s0', 'GPU-demo-node-3-2', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-2/s1', 'GPU-demo-node-3-2', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-2/s2', 'GPU-demo-node-3-2', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-2/s3', 'GPU-demo-node-3-2', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-3', NULL, 'demo-node-3', 'gpu', 'L4-24GB', 24576, 'time-slice', NULL, false, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-3/s0', 'GPU-demo-node-3-3', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-3/s1', 'GPU-demo-node-3-3', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-3/s2', 'GPU-demo-node-3-3', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);
INSERT INTO public.devices VALUES ('GPU-demo-node-3-3/s3', 'GPU-demo-node-3-3', 'demo-node-3', 'slot', 'L4-24GB', 6144, NULL, 'time-slice', true, false, 'healthy', false, 1, '2026-12-06 08:18:07.078028+00', NULL);


--
-- Data for Name: goose_db_version; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.goose_db_version VALUES (1, 0, true, '2026-12-06 08:18:06.370314');
INSERT INTO public.goose_db_version VALUES (2, 1, true, '2026-12-06 08:18:06.380607');
INSERT INTO public.goose_db_version VALUES (3, 2, true, '2026-12-06 08:18:06.418017');
INSERT INTO public.goose_db_version VALUES (4, 3, true, '2026-12-06 08:18:06.424849');
INSERT INTO public.goose_db_version VALUES (5, 4, true, '2026-12-06 08:18:06.454313');
INSERT INTO public.goose_db_version VALUES (6, 5, true, '2026-12-06 08:18:06.498332');
INSERT INTO public.goose_db_version VALUES (7, 6, true, '2026-12-06 08:18:06.534883');
INSERT INTO public.goose_db_version VALUES (8, 7, true, '2026-12-06 08:18:06.606328');
INSERT INTO public.goose_db_version VALUES (9, 10, true, '2026-12-06 08:18:06.694304');
INSERT INTO public.goose_db_version VALUES (10, 11, true, '2026-12-06 08:18:06.69926');
INSERT INTO public.goose_db_version VALUES (11, 12, true, '2026-12-06 08:18:06.72577');
INSERT INTO public.goose_db_version VALUES (12, 13, true, '2026-12-06 08:18:06.72804');
INSERT INTO public.goose_db_version VALUES (13, 14, true, '2026-12-06 08:18:06.789668');
INSERT INTO public.goose_db_version VALUES (14, 15, true, '2026-12-06 08:18:06.807558');
INSERT INTO public.goose_db_version VALUES (15, 16, true, '2026-12-06 08:18:06.815376');
INSERT INTO public.goose_db_version VALUES (16, 17, true, '2026-12-06 08:18:06.821278');
INSERT INTO public.goose_db_version VALUES (17, 18, true, '2026-12-06 08:18:06.828163');
INSERT INTO public.goose_db_version VALUES (18, 19, true, '2026-12-06 08:18:06.844475');
INSERT INTO public.goose_db_version VALUES (19, 20, true, '2026-12-06 08:18:06.847228');
INSERT INTO public.goose_db_version VALUES (20, 21, true, '2026-12-06 08:18:06.893925');
INSERT INTO public.goose_db_version VALUES (21, 22, true, '2026-12-06 08:18:06.897891');
INSERT INTO public.goose_db_version VALUES (22, 23, true, '2026-12-06 08:18:06.913906');
INSERT INTO public.goose_db_version VALUES (23, 24, true, '2026-12-06 08:18:06.928691');
INSERT INTO public.goose_db_version VALUES (24, 25, true, '2026-12-06 08:18:06.935529');
INSERT INTO public.goose_db_version VALUES (25, 26, true, '2026-12-06 08:18:06.939996');
INSERT INTO public.goose_db_version VALUES (26, 27, true, '2026-12-06 08:18:06.949878');
INSERT INTO public.goose_db_version VALUES (27, 28, true, '2026-12-06 08:18:06.953895');
INSERT INTO public.goose_db_version VALUES (28, 29, true, '2026-12-06 08:18:06.954749');
INSERT INTO public.goose_db_version VALUES (29, 30, true, '2026-12-06 08:18:06.965869');
INSERT INTO public.goose_db_version VALUES (30, 31, true, '2026-12-06 08:18:06.970271');
INSERT INTO public.goose_db_version VALUES (31, 32, true, '2026-12-06 08:18:06.971465');
INSERT INTO public.goose_db_version VALUES (32, 33, true, '2026-12-06 08:18:07.001935');
INSERT INTO public.goose_db_version VALUES (33, 34, true, '2026-12-06 08:18:07.013969');


--
-- Data for Name: idempotency_keys; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'upg-active-1', '\x1be3c3083078239d7d32f4b2637ed1882076d31126054613f8d9630e14092ee5', '{"result": {"position": {"Seq": 35, "TxID": 942}, "reservation": {"id": "rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171", "end": "2026-12-07T08:18:36Z", "spec": {"gpu": {"kind": "gpu", "count": 2, "model": "H100-80GB"}, "vcpu": 4, "diskGb": 10, "memoryMb": 8192, "tolerations": []}, "start": "2026-12-06T08:18:36.352452Z", "state": "booked", "nodeId": "demo-node-1", "poolId": "demo-pool", "tenant": "acme", "charges": {"gpu": 2, "disk": 10, "vcpu": 4, "memory": 8192}, "version": 1, "priority": 0, "deviceIds": ["GPU-demo-node-1-2", "GPU-demo-node-1-3"], "conditions": [], "preemptible": false, "priorityClass": "standard"}}}', '2026-12-06 08:18:36.352452+00', '2026-12-07 08:18:36.352452+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'upg-booked-1', '\xacbdf31c6e8828d987639cfcff5ba18c8802867afa0d1c3cfa3a07866fcbdfa4', '{"result": {"position": {"Seq": 38, "TxID": 953}, "reservation": {"id": "rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4", "end": "2026-12-08T09:18:36Z", "spec": {"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}, "start": "2026-12-08T08:18:36Z", "state": "booked", "nodeId": "demo-node-1", "poolId": "demo-pool", "tenant": "acme", "charges": {"gpu": 1}, "version": 1, "priority": 0, "deviceIds": ["GPU-demo-node-1-6"], "conditions": [], "preemptible": false, "priorityClass": "standard"}}}', '2026-12-06 08:18:36.457693+00', '2026-12-07 08:18:36.457693+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'upg-rel-1', '\x181986920a149bca32992df656c320ae8b7ca1c02766f69008c4dc3a80f310e5', '{"result": {"position": {"Seq": 40, "TxID": 964}, "reservation": {"id": "rsv_01a24a6e-f959-7444-a522-b4cb947e7f89", "end": "2026-12-06T09:18:36Z", "spec": {"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}, "start": "2026-12-06T08:18:36.506803Z", "state": "booked", "nodeId": "demo-node-1", "poolId": "demo-pool", "tenant": "acme", "charges": {"gpu": 1}, "version": 1, "priority": 0, "deviceIds": ["GPU-demo-node-1-5"], "conditions": [], "preemptible": false, "priorityClass": "standard"}}}', '2026-12-06 08:18:36.506803+00', '2026-12-07 08:18:36.506803+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'upg-long-1', '\xa6075998d8b05a574ac066e8830a01dd7a864dd512862cd5da02f29432a1d4c0', '{"result": {"position": {"Seq": 43, "TxID": 975}, "reservation": {"id": "rsv_01a24a6e-f9a2-781b-8a5a-5ff9d26e2a26", "end": "2029-02-13T08:18:36Z", "spec": {"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}, "start": "2026-12-09T08:18:36Z", "state": "booked", "nodeId": "demo-node-1", "poolId": "demo-pool", "tenant": "acme", "charges": {"gpu": 1}, "version": 1, "priority": 0, "deviceIds": ["GPU-demo-node-1-6"], "conditions": [], "preemptible": false, "priorityClass": "standard"}}}', '2026-12-06 08:18:36.581965+00', '2026-12-07 08:18:36.581965+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'upg-pend-1', '\x3d6c87a9b2eb4008bf94c7949a0916f640f9db7d14f63b5f4af9e197639672f0', '{"result": {"position": {"Seq": 44, "TxID": 986}, "reservation": {"id": "rsv_01a24a6e-f9df-7ea6-8f79-b6ebf52a1e0e", "end": "2026-12-06T10:18:36Z", "spec": {"gpu": {"kind": "gpu", "count": 8, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}, "start": "2026-12-06T08:18:36.64012Z", "state": "pending", "poolId": "demo-pool", "tenant": "acme", "charges": {"gpu": 8}, "version": 1, "priority": 0, "conditions": [{"type": "Unschedulable", "reason": "NoNodeFits", "status": true, "message": "no node can take this reservation now: demo-node-1: 5 free H100-80GB GPUs in the window, needs 8; demo-node-2: 0 free H100-80GB GPUs in the window, needs 8; demo-node-3: 0 free H100-80GB GPUs in the window, needs 8"}], "preemptible": false, "priorityClass": "standard"}}}', '2026-12-06 08:18:36.64012+00', '2026-12-07 08:18:36.64012+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'upg-longact-1', '\xde339b2760382b455f6c055da51a1c33283e0d6bc21dae95807680b290b4374d', '{"result": {"position": {"Seq": 54, "TxID": 1064}, "reservation": {"id": "rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11", "end": "2028-11-05T08:18:39Z", "spec": {"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}, "start": "2026-12-06T08:18:39.8584Z", "state": "booked", "nodeId": "demo-node-1", "poolId": "demo-pool", "tenant": "acme", "charges": {"gpu": 1}, "version": 1, "priority": 0, "deviceIds": ["GPU-demo-node-1-7"], "conditions": [], "preemptible": false, "priorityClass": "standard"}}}', '2026-12-06 08:18:39.8584+00', '2026-12-07 08:18:39.8584+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'cli-f222d5e27c4c528d14485800', '\xc43b06d5e42c3dcd5b00fa0eda8735207745a46b93fbcd06666ce95a744c1177', '{"result": {"instance": {"id": "ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d", "spec": {"command": "sleep 100000"}, "state": "requested", "nodeId": "demo-node-1", "tenant": "acme", "version": 1, "createdAt": "2026-12-06T08:18:47.472729Z", "updatedAt": "2026-12-06T08:18:47.472729Z", "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "reservationId": "rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171"}, "position": {"Seq": 66, "TxID": 1149}}}', '2026-12-06 08:18:47.472729+00', '2026-12-07 08:18:47.472729+00');
INSERT INTO public.idempotency_keys VALUES ('acme', 'demo-user', 'cli-329fd6e58c85fdcb1e877ef2', '\x45cadc367c125d92d7a823d36050790799d623e909dc1819702c60660f5a8dc8', '{"result": {"position": {"Seq": 73, "TxID": 1228}, "reservation": {"id": "rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4", "end": "2026-12-08T10:18:36Z", "spec": {"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}, "start": "2026-12-08T08:18:36Z", "state": "booked", "nodeId": "demo-node-1", "poolId": "demo-pool", "tenant": "acme", "charges": {"gpu": 1}, "version": 2, "priority": 0, "deviceIds": ["GPU-demo-node-1-6"], "conditions": [], "preemptible": false, "priorityClass": "standard"}}}', '2026-12-06 08:18:59.652768+00', '2026-12-07 08:18:59.652768+00');


--
-- Data for Name: instances; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.instances VALUES ('ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d', 'acme', 'rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171', 'alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657', 'demo-node-1', '{"command": "sleep 100000"}', 'running', '', 3, '2026-12-06 08:18:47.472729+00', '2026-12-06 08:18:48.304437+00', NULL);


--
-- Data for Name: leases; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.leases VALUES ('shard:15', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('shard:2', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('shard:3', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('shard:4', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('shard:5', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('shard:6', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('shard:7', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('shard:8', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('shard:9', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('singleton:outbox-dispatch:reservations', 'vm-7370-a9751d11', 1, '-infinity');
INSERT INTO public.leases VALUES ('singleton:outbox-dispatch:webhooks', 'vm-7370-a9751d11', 1, '-infinity');
INSERT INTO public.leases VALUES ('singleton:outbox-dispatch:fleet', 'vm-7370-a9751d11', 1, '-infinity');
INSERT INTO public.leases VALUES ('singleton:outbox-dispatch:device-holders', 'vm-7370-a9751d11', 1, '-infinity');
INSERT INTO public.leases VALUES ('singleton:outbox-dispatch:usage-windows', 'vm-7370-a9751d11', 1, '-infinity');
INSERT INTO public.leases VALUES ('gateway:gw1', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:27.117867+00');
INSERT INTO public.leases VALUES ('shard:0', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('shard:1', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('shard:10', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('shard:11', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('shard:12', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('shard:13', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');
INSERT INTO public.leases VALUES ('shard:14', 'vm-7370-a9751d11', 1, '2026-12-06 08:19:24.122989+00');


--
-- Data for Name: node_commands; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.node_commands OVERRIDING SYSTEM VALUE VALUES ('cmd_01a24a6e-f8cd-774a-b046-351692d0c63f', 'acme', 'demo-user', 'demo-node-1', 'alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657', 'assign:alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657', 'assign', true, '{"end": "2026-12-07T08:18:36Z", "vcpu": 4, "start": "2026-12-06T08:18:36.352452Z", "diskGb": 10, "devices": [{"id": "GPU-demo-node-1-2", "gpu": "GPU-demo-node-1-2", "kind": "gpu", "visible": "GPU-demo-node-1-2"}, {"id": "GPU-demo-node-1-3", "gpu": "GPU-demo-node-1-3", "kind": "gpu", "visible": "GPU-demo-node-1-3"}], "memoryMb": 8192, "generation": 1, "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "reservationId": "rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171"}', 0, 'succeeded', NULL, 'assigned alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657: 2 devices (CUDA_VISIBLE_DEVICES=GPU-demo-node-1-2,GPU-demo-node-1-3), 4 vCPU, 8192 MiB, [2026-12-06T08:18:36Z, 2026-12-07T08:18:36Z)', '', 4, 1, 'jnl_a25992865cd91d76e3ca94e4889528f8', '2026-12-06 08:18:36.352452+00', '2026-12-06 08:18:37.118636+00', '2026-12-06 08:18:37.165301+00', NULL, 1, 1);
INSERT INTO public.node_commands OVERRIDING SYSTEM VALUE VALUES ('cmd_01a24a6e-f95e-7ef0-aab5-b03f31f332b2', 'acme', 'demo-user', 'demo-node-1', 'alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03', 'assign:alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03', 'assign', true, '{"end": "2026-12-06T09:18:36Z", "vcpu": 0, "start": "2026-12-06T08:18:36.506803Z", "diskGb": 0, "devices": [{"id": "GPU-demo-node-1-5", "gpu": "GPU-demo-node-1-5", "kind": "gpu", "visible": "GPU-demo-node-1-5"}], "memoryMb": 0, "generation": 2, "allocationId": "alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03", "reservationId": "rsv_01a24a6e-f959-7444-a522-b4cb947e7f89"}', 0, 'succeeded', NULL, 'assigned alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03: 1 devices (CUDA_VISIBLE_DEVICES=GPU-demo-node-1-5), 0 vCPU, 0 MiB, [2026-12-06T08:18:36Z, 2026-12-06T09:18:36Z)', '', 4, 1, 'jnl_a25992865cd91d76e3ca94e4889528f8', '2026-12-06 08:18:36.506803+00', '2026-12-06 08:18:37.118636+00', '2026-12-06 08:18:37.233487+00', NULL, 2, 2);
INSERT INTO public.node_commands OVERRIDING SYSTEM VALUE VALUES ('cmd_01a24a6f-0677-7bf1-943e-070b494b0452', 'acme', 'demo-user', 'demo-node-1', 'alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7', 'assign:alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7', 'assign', true, '{"end": "2028-11-05T08:18:39Z", "vcpu": 0, "start": "2026-12-06T08:18:39.8584Z", "diskGb": 0, "devices": [{"id": "GPU-demo-node-1-7", "gpu": "GPU-demo-node-1-7", "kind": "gpu", "visible": "GPU-demo-node-1-7"}], "memoryMb": 0, "generation": 3, "allocationId": "alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7", "reservationId": "rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11"}', 0, 'succeeded', NULL, 'assigned alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7: 1 devices (CUDA_VISIBLE_DEVICES=GPU-demo-node-1-7), 0 vCPU, 0 MiB, [2026-12-06T08:18:39Z, 2028-11-05T08:18:39Z)', '', 4, 1, 'jnl_a25992865cd91d76e3ca94e4889528f8', '2026-12-06 08:18:39.8584+00', '2026-12-06 08:18:40.212033+00', '2026-12-06 08:18:40.245004+00', NULL, 3, 3);
INSERT INTO public.node_commands OVERRIDING SYSTEM VALUE VALUES ('cmd_01a24a6f-0a3c-78e0-af7b-75034d7334ec', 'acme', 'demo-user', 'demo-node-1', 'alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03', 'unassign:alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03', 'unassign', true, '{"reason": "reservation released", "generation": 4, "allocationId": "alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03"}', 0, 'succeeded', NULL, 'unassigned alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03', '', 4, 1, 'jnl_a25992865cd91d76e3ca94e4889528f8', '2026-12-06 08:18:40.82212+00', '2026-12-06 08:18:41.122384+00', '2026-12-06 08:18:41.195139+00', NULL, 4, 4);
INSERT INTO public.node_commands OVERRIDING SYSTEM VALUE VALUES ('cmd_01a24a6f-2435-74a5-b33c-7ae363704cbe', 'acme', 'demo-user', 'demo-node-1', 'alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657', 'inst:ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d:instance-start', 'instance-start', false, '{"script": "sleep 100000", "instanceId": "ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d"}', 0, 'succeeded', NULL, 'instance ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d started as pid 14143', '', 4, 1, 'jnl_a25992865cd91d76e3ca94e4889528f8', '2026-12-06 08:18:47.472729+00', '2026-12-06 08:18:48.122419+00', '2026-12-06 08:18:48.304437+00', 'ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d', NULL, 5);


--
-- Data for Name: node_credentials; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.node_credentials VALUES ('ncr_CJ14l5zqELMj', 'demo-node-1', '\x3ad3ecb4ca035ca9a0c7989ba90d1906d8e614249a59bdbba4a0db9be792c318', '2026-12-06 08:18:07.133996+00', NULL, NULL);
INSERT INTO public.node_credentials VALUES ('ncr_FSYru0Fd9nUC', 'demo-node-3', '\xd9fa27c717eec13f77a6993ce98d1c8141b1a07ebcd4717d1403c722535ab470', '2026-12-06 08:18:07.14381+00', NULL, NULL);
INSERT INTO public.node_credentials VALUES ('ncr_Ze0hiW6ZxPY_', 'demo-node-2', '\x8865d393be689a792f78db2f3665b2365abc26007316fc27b557287820d13086', '2026-12-06 08:18:07.144797+00', NULL, NULL);


--
-- Data for Name: node_desired; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.node_desired VALUES ('demo-node-1', 4, '2026-12-06 08:18:40.82212+00');


--
-- Data for Name: node_join_tokens; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: node_liveness_sweeps; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.node_liveness_sweeps VALUES (1, '2026-12-06 08:19:07.360188+00');


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

INSERT INTO public.node_session_credentials VALUES ('demo-node-2', 1, 'ncr_Ze0hiW6ZxPY_');
INSERT INTO public.node_session_credentials VALUES ('demo-node-3', 1, 'ncr_FSYru0Fd9nUC');
INSERT INTO public.node_session_credentials VALUES ('demo-node-1', 1, 'ncr_CJ14l5zqELMj');


--
-- Data for Name: node_sessions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.node_sessions VALUES ('demo-node-2', 1, 'gw1', 1, 'jnl_ea7dc22ea633c0def625733aa8bf6b07', true, '2026-12-06 08:18:07.165071+00', '2026-12-06 08:19:02.1806+00', NULL, NULL, '2026-12-06 08:18:07.165071+00', 'none', NULL, 0);
INSERT INTO public.node_sessions VALUES ('demo-node-3', 1, 'gw1', 1, 'jnl_24d3beaeb72723531e29d461fabb5eb3', true, '2026-12-06 08:18:07.16597+00', '2026-12-06 08:19:02.19806+00', NULL, NULL, '2026-12-06 08:18:07.16597+00', 'none', NULL, 0);
INSERT INTO public.node_sessions VALUES ('demo-node-1', 1, 'gw1', 1, 'jnl_a25992865cd91d76e3ca94e4889528f8', true, '2026-12-06 08:18:08.156715+00', '2026-12-06 08:19:03.16535+00', NULL, NULL, '2026-12-06 08:18:08.156715+00', 'none', NULL, 4);


--
-- Data for Name: nodes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.nodes VALUES ('demo-node-2', 'demo-pool', false, '{}', '{}', 'connected', 2, '2026-12-06 08:18:07.062007+00', '[]', 'demo-site');
INSERT INTO public.nodes VALUES ('demo-node-3', 'demo-pool', false, '{}', '{}', 'connected', 2, '2026-12-06 08:18:07.078028+00', '[]', 'demo-site');
INSERT INTO public.nodes VALUES ('demo-node-1', 'demo-pool', false, '{}', '{}', 'connected', 2, '2026-12-06 08:18:07.050444+00', '[]', 'demo-site');


--
-- Data for Name: outbox; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.outbox VALUES ('01a24a6e-8641-792e-ac43-5a796a586a2f', '758', 1, 'site.created', NULL, 'sites/demo-site', '{"id": "demo-site", "name": "Demo site", "version": 1}', '2026-12-06 08:18:07.040938+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8644-777e-b11d-424042cb7989', '759', 2, 'pool.created', NULL, 'pools/demo-pool', '{"id": "demo-pool", "kind": "bare-metal", "siteId": "demo-site", "version": 1, "cpuRatio": 1, "diskRatio": 1, "memoryRatio": 1, "workloadNetwork": "none"}', '2026-12-06 08:18:07.042684+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8653-7183-a6c3-ba37f5c1ca04', '762', 3, 'node.registered', NULL, 'nodes/demo-node-1', '{"id": "demo-node-1", "vcpu": 128, "diskGb": 8000, "poolId": "demo-pool", "taints": [], "version": 1, "cordoned": false, "memoryMb": 1048576}', '2026-12-06 08:18:07.050444+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8653-75ac-b2ea-982f87d114ea', '762', 4, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-0', '{"id": "GPU-demo-node-1-0", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.050444+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8653-7b6d-b0e2-c81a78cc284b', '762', 5, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-1', '{"id": "GPU-demo-node-1-1", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.050444+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8653-7e0b-9a19-acf4ba65b2d4', '762', 6, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-2', '{"id": "GPU-demo-node-1-2", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.050444+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8654-7131-a4f5-0e3ec5c8a645', '762', 7, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-3', '{"id": "GPU-demo-node-1-3", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.050444+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8654-7315-82f0-39ecfa661944', '762', 8, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-4', '{"id": "GPU-demo-node-1-4", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.050444+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8654-7512-be54-d09b9b44c69b', '762', 9, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-5', '{"id": "GPU-demo-node-1-5", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.050444+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8654-7768-a3ae-1ca79c28d9c7', '762', 10, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-6', '{"id": "GPU-demo-node-1-6", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.050444+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8654-78fb-82cb-b636ac8a0604', '762', 11, 'gpu.registered', NULL, 'devices/GPU-demo-node-1-7', '{"id": "GPU-demo-node-1-7", "model": "H100-80GB", "health": "healthy", "layout": {"mode": "exclusive"}, "nodeId": "demo-node-1", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.050444+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8661-7c22-b005-260e4a8faf4e', '764', 12, 'node.registered', NULL, 'nodes/demo-node-2', '{"id": "demo-node-2", "vcpu": 64, "diskGb": 4000, "poolId": "demo-pool", "taints": [], "version": 1, "cordoned": false, "memoryMb": 524288}', '2026-12-06 08:18:07.062007+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8662-7012-9607-5688a7f506be', '764', 13, 'gpu.registered', NULL, 'devices/GPU-demo-node-2-0', '{"id": "GPU-demo-node-2-0", "model": "A100-80GB", "health": "healthy", "layout": {"mig": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], "mode": "mig"}, "nodeId": "demo-node-2", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.062007+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8662-72ac-a264-1377a168eedf', '764', 14, 'gpu.registered', NULL, 'devices/GPU-demo-node-2-1', '{"id": "GPU-demo-node-2-1", "model": "A100-80GB", "health": "healthy", "layout": {"mig": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], "mode": "mig"}, "nodeId": "demo-node-2", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.062007+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8662-7668-9e83-f17c1b1fc718', '764', 15, 'gpu.registered', NULL, 'devices/GPU-demo-node-2-2', '{"id": "GPU-demo-node-2-2", "model": "A100-80GB", "health": "healthy", "layout": {"mig": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], "mode": "mig"}, "nodeId": "demo-node-2", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.062007+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8662-789e-bba2-c48ce4cf7631', '764', 16, 'gpu.registered', NULL, 'devices/GPU-demo-node-2-3', '{"id": "GPU-demo-node-2-3", "model": "A100-80GB", "health": "healthy", "layout": {"mig": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], "mode": "mig"}, "nodeId": "demo-node-2", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.062007+00');
INSERT INTO public.outbox VALUES ('01a24a6e-866b-7bea-be0f-23feefae2c38', '765', 17, 'node.registered', NULL, 'nodes/demo-node-3', '{"id": "demo-node-3", "vcpu": 32, "diskGb": 2000, "poolId": "demo-pool", "taints": [], "version": 1, "cordoned": false, "memoryMb": 262144}', '2026-12-06 08:18:07.078028+00');
INSERT INTO public.outbox VALUES ('01a24a6e-866b-7e4d-a696-7f07e6554c18', '765', 18, 'gpu.registered', NULL, 'devices/GPU-demo-node-3-0', '{"id": "GPU-demo-node-3-0", "model": "L4-24GB", "health": "healthy", "layout": {"mode": "time-slice", "slots": 4}, "nodeId": "demo-node-3", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.078028+00');
INSERT INTO public.outbox VALUES ('01a24a6e-866c-7008-aafc-a258f2a02ccf', '765', 19, 'gpu.registered', NULL, 'devices/GPU-demo-node-3-1', '{"id": "GPU-demo-node-3-1", "model": "L4-24GB", "health": "healthy", "layout": {"mode": "time-slice", "slots": 4}, "nodeId": "demo-node-3", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.078028+00');
INSERT INTO public.outbox VALUES ('01a24a6e-866c-70f6-bbe8-38a795c58247', '765', 20, 'gpu.registered', NULL, 'devices/GPU-demo-node-3-2', '{"id": "GPU-demo-node-3-2", "model": "L4-24GB", "health": "healthy", "layout": {"mode": "time-slice", "slots": 4}, "nodeId": "demo-node-3", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.078028+00');
INSERT INTO public.outbox VALUES ('01a24a6e-866c-71c7-9221-29d66b05b1c6', '765', 21, 'gpu.registered', NULL, 'devices/GPU-demo-node-3-3', '{"id": "GPU-demo-node-3-3", "model": "L4-24GB", "health": "healthy", "layout": {"mode": "time-slice", "slots": 4}, "nodeId": "demo-node-3", "version": 1, "quarantined": false}', '2026-12-06 08:18:07.078028+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8676-7db9-8cd1-1776bdd55d4d', '770', 22, 'quota.set', 'acme', 'quotas/acme/memory', '{"max": 2097152, "tenant": "acme", "version": 1, "resource": "memory"}', '2026-12-06 08:18:07.093883+00');
INSERT INTO public.outbox VALUES ('01a24a6e-867a-7884-816e-6230c85557c1', '772', 23, 'quota.set', 'acme', 'quotas/acme/disk', '{"max": 20000, "tenant": "acme", "version": 1, "resource": "disk"}', '2026-12-06 08:18:07.098113+00');
INSERT INTO public.outbox VALUES ('01a24a6e-867e-72f5-8e1a-0dbc026a44bb', '773', 24, 'quota.set', 'acme', 'quotas/acme/gpu', '{"max": 16, "tenant": "acme", "version": 1, "resource": "gpu"}', '2026-12-06 08:18:07.101872+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8680-70ac-8515-b1f999026aa7', '775', 25, 'quota.set', 'acme', 'quotas/acme/vcpu', '{"max": 256, "tenant": "acme", "version": 1, "resource": "vcpu"}', '2026-12-06 08:18:07.103712+00');
INSERT INTO public.outbox VALUES ('01a24a6e-86ad-7642-b5b3-bc216c8a9c0e', '783', 26, 'node.joined', NULL, 'nodes/demo-node-1', '{"id": "demo-node-1", "credentialId": "ncr_CJ14l5zqELMj"}', '2026-12-06 08:18:07.133996+00');
INSERT INTO public.outbox VALUES ('01a24a6e-86b8-799e-b4fa-7b9ee1d57d08', '785', 27, 'node.joined', NULL, 'nodes/demo-node-3', '{"id": "demo-node-3", "credentialId": "ncr_FSYru0Fd9nUC"}', '2026-12-06 08:18:07.14381+00');
INSERT INTO public.outbox VALUES ('01a24a6e-86b9-7ba6-af07-3b073cb43be8', '789', 28, 'node.joined', NULL, 'nodes/demo-node-2', '{"id": "demo-node-2", "credentialId": "ncr_Ze0hiW6ZxPY_"}', '2026-12-06 08:18:07.144797+00');
INSERT INTO public.outbox VALUES ('01a24a6e-86c4-78f8-be4a-4b29f8e936c9', '800', 29, 'node.connected', NULL, 'nodes/demo-node-2', '{"id": "demo-node-2", "state": "connected", "poolId": "demo-pool", "version": 2, "gatewayId": "gw1", "conditions": [], "sessionEpoch": 1, "previousState": "registered", "noScheduleReasons": []}', '2026-12-06 08:18:07.165071+00');
INSERT INTO public.outbox VALUES ('01a24a6e-86d6-7428-a6ca-f443a4bf48c2', '799', 30, 'node.connected', NULL, 'nodes/demo-node-3', '{"id": "demo-node-3", "state": "connected", "poolId": "demo-pool", "version": 2, "gatewayId": "gw1", "conditions": [], "sessionEpoch": 1, "previousState": "registered", "noScheduleReasons": []}', '2026-12-06 08:18:07.16597+00');
INSERT INTO public.outbox VALUES ('01a24a6e-8aa2-7045-a76d-a8533070d49a', '835', 31, 'node.connected', NULL, 'nodes/demo-node-1', '{"id": "demo-node-1", "state": "connected", "poolId": "demo-pool", "version": 2, "gatewayId": "gw1", "conditions": [], "sessionEpoch": 1, "previousState": "registered", "noScheduleReasons": []}', '2026-12-06 08:18:08.156715+00');
INSERT INTO public.outbox VALUES ('01a24a6e-dd67-7ac8-9e22-c35e4d3f7e39', '908', 32, 'webhook_endpoint.created', 'acme', 'webhook-endpoints/we_6507891eef74469e766bc6ad', '{"url": "http://127.0.0.1:29090/hook", "enabled": true, "version": 1, "endpointId": "we_6507891eef74469e766bc6ad", "eventTypes": []}', '2026-12-06 08:18:29.350271+00');
INSERT INTO public.outbox VALUES ('01a24a6e-f8cd-7722-84d9-1ca1bbbc5eea', '942', 35, 'reservation.booked', 'acme', 'reservations/rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171', '{"id": "rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171", "end": "2026-12-07T08:18:36Z", "gpus": 2, "vcpu": 4, "start": "2026-12-06T08:18:36.352452Z", "state": "booked", "diskGb": 10, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 1, "gpuModel": "H100-80GB", "memoryMb": 8192, "priority": 0, "deviceIds": ["GPU-demo-node-1-2", "GPU-demo-node-1-3"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "priorityClass": "standard"}', '2026-12-06 08:18:36.352452+00');
INSERT INTO public.outbox VALUES ('01a24a6e-f8cd-787b-9087-3601bd4b47ab', '942', 36, 'node_assignment.queued', NULL, 'node-commands/cmd_01a24a6e-f8cd-774a-b046-351692d0c63f', '{"id": "cmd_01a24a6e-f8cd-774a-b046-351692d0c63f", "kind": "assign", "state": "queued", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 1, "createdAt": "2026-12-06T08:18:36.352452Z", "retrySafe": true, "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657"}', '2026-12-06 08:18:36.352452+00');
INSERT INTO public.outbox VALUES ('01a24a6e-f931-7090-b754-f9f87094dc35', '953', 38, 'reservation.booked', 'acme', 'reservations/rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4', '{"id": "rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4", "end": "2026-12-08T09:18:36Z", "gpus": 1, "vcpu": 0, "start": "2026-12-08T08:18:36Z", "state": "booked", "diskGb": 0, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 1, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": ["GPU-demo-node-1-6"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24a6e-f930-7478-9345-2d014d51cfba", "priorityClass": "standard"}', '2026-12-06 08:18:36.457693+00');
INSERT INTO public.outbox VALUES ('01a24a6e-fbdb-7de5-9250-c810f5523429', '1012', 49, 'node_assignment.running', NULL, 'node-commands/cmd_01a24a6e-f8cd-774a-b046-351692d0c63f', '{"id": "cmd_01a24a6e-f8cd-774a-b046-351692d0c63f", "kind": "assign", "state": "running", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 3, "createdAt": "2026-12-06T08:18:36.352452Z", "retrySafe": true, "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657"}', '2026-12-06 08:18:37.130193+00');
INSERT INTO public.outbox VALUES ('01a24a6e-fc08-7a68-992c-eaac3ec3fb29', '1032', 50, 'node_assignment.succeeded', NULL, 'node-commands/cmd_01a24a6e-f8cd-774a-b046-351692d0c63f', '{"id": "cmd_01a24a6e-f8cd-774a-b046-351692d0c63f", "kind": "assign", "state": "succeeded", "nodeId": "demo-node-1", "output": "assigned alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657: 2 devices (CUDA_VISIBLE_DEVICES=GPU-demo-node-1-2,GPU-demo-node-1-3), 4 vCPU, 8192 MiB, [2026-12-06T08:18:36Z, 2026-12-07T08:18:36Z)", "tenant": "acme", "payload": {}, "version": 4, "createdAt": "2026-12-06T08:18:36.352452Z", "retrySafe": true, "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657"}', '2026-12-06 08:18:37.165301+00');
INSERT INTO public.outbox VALUES ('01a24a6e-fc33-7845-866a-8646656ecfa4', '1046', 52, 'node_assignment.succeeded', NULL, 'node-commands/cmd_01a24a6e-f95e-7ef0-aab5-b03f31f332b2', '{"id": "cmd_01a24a6e-f95e-7ef0-aab5-b03f31f332b2", "kind": "assign", "state": "succeeded", "nodeId": "demo-node-1", "output": "assigned alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03: 1 devices (CUDA_VISIBLE_DEVICES=GPU-demo-node-1-5), 0 vCPU, 0 MiB, [2026-12-06T08:18:36Z, 2026-12-06T09:18:36Z)", "tenant": "acme", "payload": {}, "version": 4, "createdAt": "2026-12-06T08:18:36.506803Z", "retrySafe": true, "allocationId": "alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03"}', '2026-12-06 08:18:37.233487+00');
INSERT INTO public.outbox VALUES ('01a24a6f-2434-7e71-b1cb-2662862abaca', '1149', 65, 'instance.requested', 'acme', 'instances/ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d', '{"id": "ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d", "spec": {"command": "sleep 100000"}, "state": "requested", "nodeId": "demo-node-1", "tenant": "acme", "version": 1, "createdAt": "2026-12-06T08:18:47.472729Z", "updatedAt": "2026-12-06T08:18:47.472729Z", "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "reservationId": "rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171"}', '2026-12-06 08:18:47.472729+00');
INSERT INTO public.outbox VALUES ('01a24a6f-2436-723d-9f6e-d4488f28e02b', '1149', 66, 'node_command.queued', 'acme', 'node-commands/cmd_01a24a6f-2435-74a5-b33c-7ae363704cbe', '{"id": "cmd_01a24a6f-2435-74a5-b33c-7ae363704cbe", "kind": "instance-start", "state": "queued", "nodeId": "demo-node-1", "tenant": "acme", "payload": {"script": "sleep 100000"}, "version": 1, "createdAt": "2026-12-06T08:18:47.472729Z", "retrySafe": false, "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "minGeneration": 0, "idempotencyKey": "inst:ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d:instance-start"}', '2026-12-06 08:18:47.472729+00');
INSERT INTO public.outbox VALUES ('01a24a6e-f95e-7ed2-bd7a-0122900d7810', '964', 40, 'reservation.booked', 'acme', 'reservations/rsv_01a24a6e-f959-7444-a522-b4cb947e7f89', '{"id": "rsv_01a24a6e-f959-7444-a522-b4cb947e7f89", "end": "2026-12-06T09:18:36Z", "gpus": 1, "vcpu": 0, "start": "2026-12-06T08:18:36.506803Z", "state": "booked", "diskGb": 0, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 1, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": ["GPU-demo-node-1-5"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03", "priorityClass": "standard"}', '2026-12-06 08:18:36.506803+00');
INSERT INTO public.outbox VALUES ('01a24a6e-f95f-7016-a745-c70a26e2f591', '964', 41, 'node_assignment.queued', NULL, 'node-commands/cmd_01a24a6e-f95e-7ef0-aab5-b03f31f332b2', '{"id": "cmd_01a24a6e-f95e-7ef0-aab5-b03f31f332b2", "kind": "assign", "state": "queued", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 1, "createdAt": "2026-12-06T08:18:36.506803Z", "retrySafe": true, "allocationId": "alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03"}', '2026-12-06 08:18:36.506803+00');
INSERT INTO public.outbox VALUES ('01a24a6e-f9b0-717d-8321-d39761fc9423', '975', 43, 'reservation.booked', 'acme', 'reservations/rsv_01a24a6e-f9a2-781b-8a5a-5ff9d26e2a26', '{"id": "rsv_01a24a6e-f9a2-781b-8a5a-5ff9d26e2a26", "end": "2029-02-13T08:18:36Z", "gpus": 1, "vcpu": 0, "start": "2026-12-09T08:18:36Z", "state": "booked", "diskGb": 0, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 1, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": ["GPU-demo-node-1-6"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24a6e-f9ac-79b4-ac5e-75b0416f6f00", "priorityClass": "standard"}', '2026-12-06 08:18:36.581965+00');
INSERT INTO public.outbox VALUES ('01a24a6e-f9e1-7bf9-bad0-63266e495377', '986', 44, 'reservation.pending', 'acme', 'reservations/rsv_01a24a6e-f9df-7ea6-8f79-b6ebf52a1e0e', '{"id": "rsv_01a24a6e-f9df-7ea6-8f79-b6ebf52a1e0e", "end": "2026-12-06T10:18:36Z", "gpus": 8, "vcpu": 0, "start": "2026-12-06T08:18:36.64012Z", "state": "pending", "diskGb": 0, "nodeId": "", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 1, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": null, "conditions": [{"type": "Unschedulable", "reason": "NoNodeFits", "status": true, "message": "no node can take this reservation now: demo-node-1: 5 free H100-80GB GPUs in the window, needs 8; demo-node-2: 0 free H100-80GB GPUs in the window, needs 8; demo-node-3: 0 free H100-80GB GPUs in the window, needs 8"}], "preemptible": false, "tolerations": [], "priorityClass": "standard"}', '2026-12-06 08:18:36.64012+00');
INSERT INTO public.outbox VALUES ('01a24a6e-fbc2-72a6-bfff-16c269d2ce76', '992', 45, 'node_assignment.sent', NULL, 'node-commands/cmd_01a24a6e-f8cd-774a-b046-351692d0c63f', '{"id": "cmd_01a24a6e-f8cd-774a-b046-351692d0c63f", "kind": "assign", "state": "sent", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 2, "createdAt": "2026-12-06T08:18:36.352452Z", "journalId": "jnl_a25992865cd91d76e3ca94e4889528f8", "retrySafe": true, "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "sessionEpoch": 1, "minGeneration": 0, "idempotencyKey": "assign:alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657"}', '2026-12-06 08:18:37.118636+00');
INSERT INTO public.outbox VALUES ('01a24a6e-fbc3-704d-b23e-bf44e713c66e', '992', 46, 'node_assignment.sent', NULL, 'node-commands/cmd_01a24a6e-f95e-7ef0-aab5-b03f31f332b2', '{"id": "cmd_01a24a6e-f95e-7ef0-aab5-b03f31f332b2", "kind": "assign", "state": "sent", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 2, "createdAt": "2026-12-06T08:18:36.506803Z", "journalId": "jnl_a25992865cd91d76e3ca94e4889528f8", "retrySafe": true, "allocationId": "alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03", "sessionEpoch": 1, "minGeneration": 0, "idempotencyKey": "assign:alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03"}', '2026-12-06 08:18:37.118636+00');
INSERT INTO public.outbox VALUES ('01a24a6e-fbc3-74f8-a0ae-b77be1147c09', '994', 47, 'reservation.activated', 'acme', 'reservations/rsv_01a24a6e-f959-7444-a522-b4cb947e7f89', '{"id": "rsv_01a24a6e-f959-7444-a522-b4cb947e7f89", "end": "2026-12-06T09:18:36Z", "gpus": 1, "vcpu": 0, "start": "2026-12-06T08:18:36.506803Z", "state": "active", "diskGb": 0, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 2, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": ["GPU-demo-node-1-5"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03", "priorityClass": "standard"}', '2026-12-06 08:18:37.119983+00');
INSERT INTO public.outbox VALUES ('01a24a6f-0677-7bcd-a685-3d4f24b60982', '1064', 54, 'reservation.booked', 'acme', 'reservations/rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11', '{"id": "rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11", "end": "2028-11-05T08:18:39Z", "gpus": 1, "vcpu": 0, "start": "2026-12-06T08:18:39.8584Z", "state": "booked", "diskGb": 0, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 1, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": ["GPU-demo-node-1-7"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7", "priorityClass": "standard"}', '2026-12-06 08:18:39.8584+00');
INSERT INTO public.outbox VALUES ('01a24a6f-0677-7c42-a930-f88a7836e3ab', '1064', 55, 'node_assignment.queued', NULL, 'node-commands/cmd_01a24a6f-0677-7bf1-943e-070b494b0452', '{"id": "cmd_01a24a6f-0677-7bf1-943e-070b494b0452", "kind": "assign", "state": "queued", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 1, "createdAt": "2026-12-06T08:18:39.8584Z", "retrySafe": true, "allocationId": "alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7"}', '2026-12-06 08:18:39.8584+00');
INSERT INTO public.outbox VALUES ('01a24a6f-0a36-7a4b-b784-51bd3c31e061', '1088', 60, 'reservation.released', 'acme', 'reservations/rsv_01a24a6e-f959-7444-a522-b4cb947e7f89', '{"id": "rsv_01a24a6e-f959-7444-a522-b4cb947e7f89", "end": "2026-12-06T09:18:36Z", "gpus": 1, "vcpu": 0, "start": "2026-12-06T08:18:36.506803Z", "state": "released", "diskGb": 0, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 3, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": ["GPU-demo-node-1-5"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03", "priorityClass": "standard"}', '2026-12-06 08:18:40.82212+00');
INSERT INTO public.outbox VALUES ('01a24a6f-0a3c-7942-a634-0169f67686a6', '1088', 61, 'node_assignment.queued', NULL, 'node-commands/cmd_01a24a6f-0a3c-78e0-af7b-75034d7334ec', '{"id": "cmd_01a24a6f-0a3c-78e0-af7b-75034d7334ec", "kind": "unassign", "state": "queued", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 1, "createdAt": "2026-12-06T08:18:40.82212Z", "retrySafe": true, "allocationId": "alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03", "minGeneration": 0, "idempotencyKey": "unassign:alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03"}', '2026-12-06 08:18:40.82212+00');
INSERT INTO public.outbox VALUES ('01a24a6e-fbcb-71cb-820e-9eb0018c1bc3', '996', 48, 'reservation.activated', 'acme', 'reservations/rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171', '{"id": "rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171", "end": "2026-12-07T08:18:36Z", "gpus": 2, "vcpu": 4, "start": "2026-12-06T08:18:36.352452Z", "state": "active", "diskGb": 10, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 2, "gpuModel": "H100-80GB", "memoryMb": 8192, "priority": 0, "deviceIds": ["GPU-demo-node-1-2", "GPU-demo-node-1-3"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "priorityClass": "standard"}', '2026-12-06 08:18:37.122572+00');
INSERT INTO public.outbox VALUES ('01a24a6e-fc23-7dd2-8f0d-cf1e33f9ae3e', '1041', 51, 'node_assignment.running', NULL, 'node-commands/cmd_01a24a6e-f95e-7ef0-aab5-b03f31f332b2', '{"id": "cmd_01a24a6e-f95e-7ef0-aab5-b03f31f332b2", "kind": "assign", "state": "running", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 3, "createdAt": "2026-12-06T08:18:36.506803Z", "retrySafe": true, "allocationId": "alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03"}', '2026-12-06 08:18:37.207796+00');
INSERT INTO public.outbox VALUES ('01a24a6f-07e2-706d-8c03-3ccc1da32fec', '1078', 56, 'reservation.activated', 'acme', 'reservations/rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11', '{"id": "rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11", "end": "2028-11-05T08:18:39Z", "gpus": 1, "vcpu": 0, "start": "2026-12-06T08:18:39.8584Z", "state": "active", "diskGb": 0, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 2, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": ["GPU-demo-node-1-7"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7", "priorityClass": "standard"}', '2026-12-06 08:18:40.21163+00');
INSERT INTO public.outbox VALUES ('01a24a6f-0ba5-7c25-a8d9-263da5f0de1b', '1101', 63, 'node_assignment.running', NULL, 'node-commands/cmd_01a24a6f-0a3c-78e0-af7b-75034d7334ec', '{"id": "cmd_01a24a6f-0a3c-78e0-af7b-75034d7334ec", "kind": "unassign", "state": "running", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 3, "createdAt": "2026-12-06T08:18:40.82212Z", "retrySafe": true, "allocationId": "alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03", "minGeneration": 0, "idempotencyKey": "unassign:alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03"}', '2026-12-06 08:18:41.140233+00');
INSERT INTO public.outbox VALUES ('01a24a6f-07e8-7269-a95e-5b7c14080b2c', '1079', 57, 'node_assignment.sent', NULL, 'node-commands/cmd_01a24a6f-0677-7bf1-943e-070b494b0452', '{"id": "cmd_01a24a6f-0677-7bf1-943e-070b494b0452", "kind": "assign", "state": "sent", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 2, "createdAt": "2026-12-06T08:18:39.8584Z", "journalId": "jnl_a25992865cd91d76e3ca94e4889528f8", "retrySafe": true, "allocationId": "alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7", "sessionEpoch": 1, "minGeneration": 0, "idempotencyKey": "assign:alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7"}', '2026-12-06 08:18:40.212033+00');
INSERT INTO public.outbox VALUES ('01a24a6f-07f0-7e32-8d47-99e366f52e15', '1081', 58, 'node_assignment.running', NULL, 'node-commands/cmd_01a24a6f-0677-7bf1-943e-070b494b0452', '{"id": "cmd_01a24a6f-0677-7bf1-943e-070b494b0452", "kind": "assign", "state": "running", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 3, "createdAt": "2026-12-06T08:18:39.8584Z", "retrySafe": true, "allocationId": "alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7"}', '2026-12-06 08:18:40.239928+00');
INSERT INTO public.outbox VALUES ('01a24a6f-07f6-7757-b674-f82543bcfa94', '1084', 59, 'node_assignment.succeeded', NULL, 'node-commands/cmd_01a24a6f-0677-7bf1-943e-070b494b0452', '{"id": "cmd_01a24a6f-0677-7bf1-943e-070b494b0452", "kind": "assign", "state": "succeeded", "nodeId": "demo-node-1", "output": "assigned alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7: 1 devices (CUDA_VISIBLE_DEVICES=GPU-demo-node-1-7), 0 vCPU, 0 MiB, [2026-12-06T08:18:39Z, 2028-11-05T08:18:39Z)", "tenant": "acme", "payload": {}, "version": 4, "createdAt": "2026-12-06T08:18:39.8584Z", "retrySafe": true, "allocationId": "alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7", "minGeneration": 0, "idempotencyKey": "assign:alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7"}', '2026-12-06 08:18:40.245004+00');
INSERT INTO public.outbox VALUES ('01a24a6f-0bac-71b2-b416-eacee0691d6f', '1108', 64, 'node_assignment.succeeded', NULL, 'node-commands/cmd_01a24a6f-0a3c-78e0-af7b-75034d7334ec', '{"id": "cmd_01a24a6f-0a3c-78e0-af7b-75034d7334ec", "kind": "unassign", "state": "succeeded", "nodeId": "demo-node-1", "output": "unassigned alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03", "tenant": "acme", "payload": {}, "version": 4, "createdAt": "2026-12-06T08:18:40.82212Z", "retrySafe": true, "allocationId": "alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03", "minGeneration": 0, "idempotencyKey": "unassign:alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03"}', '2026-12-06 08:18:41.195139+00');
INSERT INTO public.outbox VALUES ('01a24a6f-26e9-7921-9957-8ef433e74bf5', '1170', 68, 'node_command.running', 'acme', 'node-commands/cmd_01a24a6f-2435-74a5-b33c-7ae363704cbe', '{"id": "cmd_01a24a6f-2435-74a5-b33c-7ae363704cbe", "kind": "instance-start", "state": "running", "nodeId": "demo-node-1", "tenant": "acme", "payload": {"script": "sleep 100000"}, "version": 3, "createdAt": "2026-12-06T08:18:47.472729Z", "retrySafe": false, "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "minGeneration": 0, "idempotencyKey": "inst:ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d:instance-start"}', '2026-12-06 08:18:48.164357+00');
INSERT INTO public.outbox VALUES ('01a24a6f-270f-726b-af3e-9635b3ca87b9', '1170', 69, 'instance.provisioning', 'acme', 'instances/ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d', '{"id": "ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d", "spec": {"command": "sleep 100000"}, "state": "provisioning", "nodeId": "demo-node-1", "tenant": "acme", "version": 2, "createdAt": "2026-12-06T08:18:47.472729Z", "updatedAt": "2026-12-06T08:18:47.472729Z", "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "reservationId": "rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171"}', '2026-12-06 08:18:48.164357+00');
INSERT INTO public.outbox VALUES ('01a24a6f-0b69-7e12-976c-1b168fff3ee4', '1096', 62, 'node_assignment.sent', NULL, 'node-commands/cmd_01a24a6f-0a3c-78e0-af7b-75034d7334ec', '{"id": "cmd_01a24a6f-0a3c-78e0-af7b-75034d7334ec", "kind": "unassign", "state": "sent", "nodeId": "demo-node-1", "tenant": "acme", "payload": {}, "version": 2, "createdAt": "2026-12-06T08:18:40.82212Z", "journalId": "jnl_a25992865cd91d76e3ca94e4889528f8", "retrySafe": true, "allocationId": "alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03", "sessionEpoch": 1, "minGeneration": 0, "idempotencyKey": "unassign:alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03"}', '2026-12-06 08:18:41.122384+00');
INSERT INTO public.outbox VALUES ('01a24a6f-26be-7b57-bd2c-a4e8a4d47e5c', '1162', 67, 'node_command.sent', 'acme', 'node-commands/cmd_01a24a6f-2435-74a5-b33c-7ae363704cbe', '{"id": "cmd_01a24a6f-2435-74a5-b33c-7ae363704cbe", "kind": "instance-start", "state": "sent", "nodeId": "demo-node-1", "tenant": "acme", "payload": {"script": "sleep 100000"}, "version": 2, "createdAt": "2026-12-06T08:18:47.472729Z", "journalId": "jnl_a25992865cd91d76e3ca94e4889528f8", "retrySafe": false, "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "sessionEpoch": 1, "minGeneration": 0, "idempotencyKey": "inst:ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d:instance-start"}', '2026-12-06 08:18:48.122419+00');
INSERT INTO public.outbox VALUES ('01a24a6f-2771-7b92-9f33-fcdfe23687f2', '1184', 70, 'node_command.succeeded', 'acme', 'node-commands/cmd_01a24a6f-2435-74a5-b33c-7ae363704cbe', '{"id": "cmd_01a24a6f-2435-74a5-b33c-7ae363704cbe", "kind": "instance-start", "state": "succeeded", "nodeId": "demo-node-1", "output": "instance ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d started as pid 14143", "tenant": "acme", "payload": {"script": "sleep 100000"}, "version": 4, "createdAt": "2026-12-06T08:18:47.472729Z", "retrySafe": false, "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "minGeneration": 0, "idempotencyKey": "inst:ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d:instance-start"}', '2026-12-06 08:18:48.304437+00');
INSERT INTO public.outbox VALUES ('01a24a6f-2773-7247-b07c-7bab0a975114', '1184', 71, 'instance.running', 'acme', 'instances/ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d', '{"id": "ins_01a24a6f-2433-7b1e-a0b3-8be66572ea4d", "spec": {"command": "sleep 100000"}, "state": "running", "nodeId": "demo-node-1", "tenant": "acme", "version": 3, "createdAt": "2026-12-06T08:18:47.472729Z", "updatedAt": "2026-12-06T08:18:48.164357Z", "allocationId": "alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657", "reservationId": "rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171"}', '2026-12-06 08:18:48.304437+00');
INSERT INTO public.outbox VALUES ('01a24a6f-53c7-7642-a1d1-a2522e79511a', '1228', 73, 'reservation.extended', 'acme', 'reservations/rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4', '{"id": "rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4", "end": "2026-12-08T10:18:36Z", "gpus": 1, "vcpu": 0, "start": "2026-12-08T08:18:36Z", "state": "booked", "diskGb": 0, "nodeId": "demo-node-1", "poolId": "demo-pool", "siteId": "", "tenant": "acme", "gpuKind": "gpu", "version": 2, "gpuModel": "H100-80GB", "memoryMb": 0, "priority": 0, "deviceIds": ["GPU-demo-node-1-6"], "conditions": [], "preemptible": false, "tolerations": [], "allocationId": "alc_01a24a6e-f930-7478-9345-2d014d51cfba", "priorityClass": "standard"}', '2026-12-06 08:18:59.652768+00');


--
-- Data for Name: outbox_cursors; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.outbox_cursors VALUES ('device-holders', '1228', 73, '2026-12-06 08:18:59.657838+00');
INSERT INTO public.outbox_cursors VALUES ('reservations', '1228', 73, '2026-12-06 08:18:59.65911+00');
INSERT INTO public.outbox_cursors VALUES ('fleet', '1228', 73, '2026-12-06 08:18:59.660706+00');
INSERT INTO public.outbox_cursors VALUES ('usage-windows', '1228', 73, '2026-12-06 08:18:59.657875+00');
INSERT INTO public.outbox_cursors VALUES ('webhooks', '1228', 73, '2026-12-06 08:18:59.662848+00');


--
-- Data for Name: pending_queue_positions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pending_queue_positions VALUES ('rsv_01a24a6e-f9df-7ea6-8f79-b6ebf52a1e0e', 'pool:demo-pool', 1, 1, 0.025864180960911486, 1, '2026-12-06 08:19:07.12023+00');


--
-- Data for Name: pool_capacity_rollup; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pool_capacity_rollup VALUES ('demo-pool', 'disk', 14000, 10);
INSERT INTO public.pool_capacity_rollup VALUES ('demo-pool', 'memory', 1835008, 8192);
INSERT INTO public.pool_capacity_rollup VALUES ('demo-pool', 'vcpu', 224, 4);


--
-- Data for Name: pools; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pools VALUES ('demo-pool', 'demo-site', 'bare-metal', NULL, 1, 1, 1, 1, '2026-12-06 08:18:07.042684+00', 'none');


--
-- Data for Name: priority_classes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.priority_classes VALUES ('standard', 0, false, 30, 'The default class: never preempted.', true, 'migration', 1, '2026-12-06 08:18:06.971465+00');


--
-- Data for Name: quota_usage; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.quota_usage VALUES ('acme', 'disk', 10, 20000, 1);
INSERT INTO public.quota_usage VALUES ('acme', 'memory', 8192, 2097152, 1);
INSERT INTO public.quota_usage VALUES ('acme', 'vcpu', 4, 256, 1);
INSERT INTO public.quota_usage VALUES ('acme', 'gpu', 13, 16, 1);


--
-- Data for Name: reservation_preemptions; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: reservations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.reservations VALUES ('rsv_01a24a6e-f9a2-781b-8a5a-5ff9d26e2a26', 'acme', 'demo-user', 'booked', 'demo-pool', NULL, '{"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}', '["2026-12-09 08:18:36+00","2029-02-13 08:18:36+00")', '{"gpu": 1}', '[]', 1, '2026-12-06 08:18:36.581965+00', '2026-12-06 08:18:36.581965+00', 'standard', 0, false);
INSERT INTO public.reservations VALUES ('rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171', 'acme', 'demo-user', 'active', 'demo-pool', NULL, '{"gpu": {"kind": "gpu", "count": 2, "model": "H100-80GB"}, "vcpu": 4, "diskGb": 10, "memoryMb": 8192, "tolerations": []}', '["2026-12-06 08:18:36.352452+00","2026-12-07 08:18:36+00")', '{"gpu": 2, "disk": 10, "vcpu": 4, "memory": 8192}', '[]', 2, '2026-12-06 08:18:36.352452+00', '2026-12-06 08:18:37.122572+00', 'standard', 0, false);
INSERT INTO public.reservations VALUES ('rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11', 'acme', 'demo-user', 'active', 'demo-pool', NULL, '{"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}', '["2026-12-06 08:18:39.8584+00","2028-11-05 08:18:39+00")', '{"gpu": 1}', '[]', 2, '2026-12-06 08:18:39.8584+00', '2026-12-06 08:18:40.21163+00', 'standard', 0, false);
INSERT INTO public.reservations VALUES ('rsv_01a24a6e-f959-7444-a522-b4cb947e7f89', 'acme', 'demo-user', 'released', 'demo-pool', NULL, '{"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}', '["2026-12-06 08:18:36.506803+00","2026-12-06 09:18:36+00")', '{"gpu": 1}', '[]', 3, '2026-12-06 08:18:36.506803+00', '2026-12-06 08:18:40.82212+00', 'standard', 0, false);
INSERT INTO public.reservations VALUES ('rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4', 'acme', 'demo-user', 'booked', 'demo-pool', NULL, '{"gpu": {"kind": "gpu", "count": 1, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}', '["2026-12-08 08:18:36+00","2026-12-08 10:18:36+00")', '{"gpu": 1}', '[]', 2, '2026-12-06 08:18:36.457693+00', '2026-12-06 08:18:59.652768+00', 'standard', 0, false);
INSERT INTO public.reservations VALUES ('rsv_01a24a6e-f9df-7ea6-8f79-b6ebf52a1e0e', 'acme', 'demo-user', 'pending', 'demo-pool', NULL, '{"gpu": {"kind": "gpu", "count": 8, "model": "H100-80GB"}, "vcpu": 0, "diskGb": 0, "memoryMb": 0, "tolerations": []}', '["2026-12-06 08:18:36.64012+00","2026-12-06 10:18:36+00")', '{"gpu": 8}', '[{"type": "Unschedulable", "reason": "NoNodeFits", "status": true, "message": "no node can take this reservation now: demo-node-1: 5 free H100-80GB GPUs in the window, needs 8; demo-node-2: 0 free H100-80GB GPUs in the window, needs 8; demo-node-3: 0 free H100-80GB GPUs in the window, needs 8"}]', 1, '2026-12-06 08:18:36.64012+00', '2026-12-06 08:19:07.128381+00', 'standard', 0, false);


--
-- Data for Name: rm_device_holders; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rm_device_holders VALUES ('GPU-demo-node-1-6', 'rsv_01a24a6e-f9a2-781b-8a5a-5ff9d26e2a26', 'acme', 'demo-node-1', '["2026-12-09 08:18:36+00","2029-02-13 08:18:36+00")', 1, '975', 43);
INSERT INTO public.rm_device_holders VALUES ('GPU-demo-node-1-2', 'rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171', 'acme', 'demo-node-1', '["2026-12-06 08:18:36.352452+00","2026-12-07 08:18:36+00")', 2, '996', 48);
INSERT INTO public.rm_device_holders VALUES ('GPU-demo-node-1-3', 'rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171', 'acme', 'demo-node-1', '["2026-12-06 08:18:36.352452+00","2026-12-07 08:18:36+00")', 2, '996', 48);
INSERT INTO public.rm_device_holders VALUES ('GPU-demo-node-1-7', 'rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11', 'acme', 'demo-node-1', '["2026-12-06 08:18:39.8584+00","2028-11-05 08:18:39+00")', 2, '1078', 56);
INSERT INTO public.rm_device_holders VALUES ('GPU-demo-node-1-5', 'rsv_01a24a6e-f959-7444-a522-b4cb947e7f89', 'acme', 'demo-node-1', '["2026-12-06 08:18:36.506803+00","2026-12-06 08:18:40.82212+00")', 3, '1088', 60);
INSERT INTO public.rm_device_holders VALUES ('GPU-demo-node-1-6', 'rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4', 'acme', 'demo-node-1', '["2026-12-08 08:18:36+00","2026-12-08 10:18:36+00")', 2, '1228', 73);


--
-- Data for Name: rm_fleet_allocations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rm_fleet_allocations VALUES ('rsv_01a24a6e-f9a2-781b-8a5a-5ff9d26e2a26', 'acme', 'demo-node-1', 'demo-pool', '{GPU-demo-node-1-6}', 0, 0, 0, true, 1);
INSERT INTO public.rm_fleet_allocations VALUES ('rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171', 'acme', 'demo-node-1', 'demo-pool', '{GPU-demo-node-1-2,GPU-demo-node-1-3}', 4, 8192, 10, true, 2);
INSERT INTO public.rm_fleet_allocations VALUES ('rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11', 'acme', 'demo-node-1', 'demo-pool', '{GPU-demo-node-1-7}', 0, 0, 0, true, 2);
INSERT INTO public.rm_fleet_allocations VALUES ('rsv_01a24a6e-f959-7444-a522-b4cb947e7f89', 'acme', 'demo-node-1', 'demo-pool', '{GPU-demo-node-1-5}', 0, 0, 0, false, 3);
INSERT INTO public.rm_fleet_allocations VALUES ('rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4', 'acme', 'demo-node-1', 'demo-pool', '{GPU-demo-node-1-6}', 0, 0, 0, true, 2);


--
-- Data for Name: rm_fleet_devices; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-0', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-1', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-2', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-3', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-4', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-5', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-6', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-1-7', 'demo-node-1', 'demo-pool', NULL, 'gpu', 'H100-80GB', 'exclusive', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-0', 'demo-node-2', 'demo-pool', NULL, 'gpu', 'A100-80GB', 'mig', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-0/mig-0', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-0', 'mig', 'A100-80GB', NULL, '3g.40gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-0/mig-1', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-0', 'mig', 'A100-80GB', NULL, '2g.20gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-0/mig-2', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-0', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-0/mig-3', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-0', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-1', 'demo-node-2', 'demo-pool', NULL, 'gpu', 'A100-80GB', 'mig', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-1/mig-0', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-1', 'mig', 'A100-80GB', NULL, '3g.40gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-1/mig-1', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-1', 'mig', 'A100-80GB', NULL, '2g.20gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-1/mig-2', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-1', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-1/mig-3', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-1', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-2', 'demo-node-2', 'demo-pool', NULL, 'gpu', 'A100-80GB', 'mig', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-2/mig-0', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-2', 'mig', 'A100-80GB', NULL, '3g.40gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-2/mig-1', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-2', 'mig', 'A100-80GB', NULL, '2g.20gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-2/mig-2', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-2', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-2/mig-3', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-2', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-3', 'demo-node-2', 'demo-pool', NULL, 'gpu', 'A100-80GB', 'mig', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-3/mig-0', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-3', 'mig', 'A100-80GB', NULL, '3g.40gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-3/mig-1', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-3', 'mig', 'A100-80GB', NULL, '2g.20gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-3/mig-2', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-3', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-2-3/mig-3', 'demo-node-2', 'demo-pool', 'GPU-demo-node-2-3', 'mig', 'A100-80GB', NULL, '1g.10gb', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-0', 'demo-node-3', 'demo-pool', NULL, 'gpu', 'L4-24GB', 'time-slice', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-0/s0', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-0', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-0/s1', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-0', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-0/s2', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-0', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-0/s3', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-0', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-1', 'demo-node-3', 'demo-pool', NULL, 'gpu', 'L4-24GB', 'time-slice', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-1/s0', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-1', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-1/s1', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-1', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-1/s2', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-1', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-1/s3', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-1', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-2', 'demo-node-3', 'demo-pool', NULL, 'gpu', 'L4-24GB', 'time-slice', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-2/s0', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-2', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-2/s1', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-2', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-2/s2', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-2', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-2/s3', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-2', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-3', 'demo-node-3', 'demo-pool', NULL, 'gpu', 'L4-24GB', 'time-slice', NULL, false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-3/s0', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-3', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-3/s1', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-3', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-3/s2', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-3', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);
INSERT INTO public.rm_fleet_devices VALUES ('GPU-demo-node-3-3/s3', 'demo-node-3', 'demo-pool', 'GPU-demo-node-3-3', 'slot', 'L4-24GB', NULL, 'time-slice', false, 'healthy', false, 1);


--
-- Data for Name: rm_fleet_nodes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rm_fleet_nodes VALUES ('demo-node-3', 'demo-pool', false, '{}', 32, 262144, 2000, 2, '2026-12-06 08:18:07.078028+00', '2026-12-06 08:18:07.16597+00', '799', 30, 'connected', '{}', '[]');
INSERT INTO public.rm_fleet_nodes VALUES ('demo-node-2', 'demo-pool', false, '{}', 64, 524288, 4000, 2, '2026-12-06 08:18:07.062007+00', '2026-12-06 08:18:07.165071+00', '800', 29, 'connected', '{}', '[]');
INSERT INTO public.rm_fleet_nodes VALUES ('demo-node-1', 'demo-pool', false, '{}', 128, 1048576, 8000, 2, '2026-12-06 08:18:07.050444+00', '2026-12-06 08:18:08.156715+00', '835', 31, 'connected', '{}', '[]');


--
-- Data for Name: rm_fleet_pools; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rm_fleet_pools VALUES ('demo-pool', 'demo-site', 'bare-metal', 1, 1, 1, 1, 'none');


--
-- Data for Name: rm_reservations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rm_reservations VALUES ('rsv_01a24a6e-f9a2-781b-8a5a-5ff9d26e2a26', 'acme', 'booked', 'demo-pool', NULL, 'demo-node-1', '{GPU-demo-node-1-6}', '2026-12-09 08:18:36+00', '2029-02-13 08:18:36+00', '{}', '[]', 1, '975', 43, '975', 43, '2026-12-06 08:18:36.581965+00', '2026-12-06 08:18:36.581965+00', 'standard', 0, false);
INSERT INTO public.rm_reservations VALUES ('rsv_01a24a6e-f9df-7ea6-8f79-b6ebf52a1e0e', 'acme', 'pending', 'demo-pool', NULL, NULL, '{}', '2026-12-06 08:18:36.64012+00', '2026-12-06 10:18:36+00', '{}', '[{"type": "Unschedulable", "reason": "NoNodeFits", "status": true, "message": "no node can take this reservation now: demo-node-1: 5 free H100-80GB GPUs in the window, needs 8; demo-node-2: 0 free H100-80GB GPUs in the window, needs 8; demo-node-3: 0 free H100-80GB GPUs in the window, needs 8"}]', 1, '986', 44, '986', 44, '2026-12-06 08:18:36.64012+00', '2026-12-06 08:18:36.64012+00', 'standard', 0, false);
INSERT INTO public.rm_reservations VALUES ('rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171', 'acme', 'active', 'demo-pool', NULL, 'demo-node-1', '{GPU-demo-node-1-2,GPU-demo-node-1-3}', '2026-12-06 08:18:36.352452+00', '2026-12-07 08:18:36+00', '{}', '[]', 2, '942', 35, '996', 48, '2026-12-06 08:18:36.352452+00', '2026-12-06 08:18:37.122572+00', 'standard', 0, false);
INSERT INTO public.rm_reservations VALUES ('rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11', 'acme', 'active', 'demo-pool', NULL, 'demo-node-1', '{GPU-demo-node-1-7}', '2026-12-06 08:18:39.8584+00', '2028-11-05 08:18:39+00', '{}', '[]', 2, '1064', 54, '1078', 56, '2026-12-06 08:18:39.8584+00', '2026-12-06 08:18:40.21163+00', 'standard', 0, false);
INSERT INTO public.rm_reservations VALUES ('rsv_01a24a6e-f959-7444-a522-b4cb947e7f89', 'acme', 'released', 'demo-pool', NULL, 'demo-node-1', '{GPU-demo-node-1-5}', '2026-12-06 08:18:36.506803+00', '2026-12-06 09:18:36+00', '{}', '[]', 3, '964', 40, '1088', 60, '2026-12-06 08:18:36.506803+00', '2026-12-06 08:18:40.82212+00', 'standard', 0, false);
INSERT INTO public.rm_reservations VALUES ('rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4', 'acme', 'booked', 'demo-pool', NULL, 'demo-node-1', '{GPU-demo-node-1-6}', '2026-12-08 08:18:36+00', '2026-12-08 10:18:36+00', '{}', '[]', 2, '953', 38, '1228', 73, '2026-12-06 08:18:36.457693+00', '2026-12-06 08:18:59.652768+00', 'standard', 0, false);


--
-- Data for Name: rm_usage_allocations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rm_usage_allocations VALUES ('rsv_01a24a6e-f9a2-781b-8a5a-5ff9d26e2a26', 'alc_01a24a6e-f9ac-79b4-ac5e-75b0416f6f00', 'acme', 'demo-pool', 'demo-node-1', 1, 0, 0, 0, '2026-12-09 08:18:36+00', '2029-02-13 08:18:36+00', false, 1, 'gpu', 'H100-80GB', '', '');
INSERT INTO public.rm_usage_allocations VALUES ('rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171', 'alc_01a24a6e-f8c7-7d71-9dd2-db2f3aaea657', 'acme', 'demo-pool', 'demo-node-1', 2, 4, 8192, 10, '2026-12-06 08:18:36.352452+00', '2026-12-07 08:18:36+00', false, 2, 'gpu', 'H100-80GB', '', '');
INSERT INTO public.rm_usage_allocations VALUES ('rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11', 'alc_01a24a6f-0675-7d5f-9d44-8facec59d0e7', 'acme', 'demo-pool', 'demo-node-1', 1, 0, 0, 0, '2026-12-06 08:18:39.8584+00', '2028-11-05 08:18:39+00', false, 2, 'gpu', 'H100-80GB', '', '');
INSERT INTO public.rm_usage_allocations VALUES ('rsv_01a24a6e-f959-7444-a522-b4cb947e7f89', 'alc_01a24a6e-f95d-7e10-939c-3a6c97b1ab03', 'acme', 'demo-pool', 'demo-node-1', 1, 0, 0, 0, '2026-12-06 08:18:36.506803+00', '2026-12-06 08:18:40.82212+00', true, 3, 'gpu', 'H100-80GB', '', '');
INSERT INTO public.rm_usage_allocations VALUES ('rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4', 'alc_01a24a6e-f930-7478-9345-2d014d51cfba', 'acme', 'demo-pool', 'demo-node-1', 1, 0, 0, 0, '2026-12-08 08:18:36+00', '2026-12-08 10:18:36+00', false, 2, 'gpu', 'H100-80GB', '', '');


--
-- Data for Name: sites; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.sites VALUES ('demo-site', 'Demo site', 1, '2026-12-06 08:18:07.040938+00');


--
-- Data for Name: stream_tickets; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: tenant_fair_shares; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: tenant_priority_class_sets; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: tenant_priority_classes; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: tenants; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.tenants VALUES ('ops', '2026-12-06 08:18:07.089924+00');
INSERT INTO public.tenants VALUES ('acme', '2026-12-06 08:18:07.092124+00');


--
-- Data for Name: webhook_attempts; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.webhook_attempts VALUES (1, 'b33244c7-c2e3-4f50-9c47-8a2a594534e7', 'we_6507891eef74469e766bc6ad', '01a24a6e-dd67-7ac8-9e22-c35e4d3f7e39', 1, 200, 1, '', NULL, '2026-12-06 08:18:29.384931+00');
INSERT INTO public.webhook_attempts VALUES (2, '62f6a3cc-ecd0-4670-80db-f7c9c742d6c4', 'we_6507891eef74469e766bc6ad', '01a24a6e-f8cd-7722-84d9-1ca1bbbc5eea', 1, 200, 2, '', NULL, '2026-12-06 08:18:36.427131+00');
INSERT INTO public.webhook_attempts VALUES (3, '604fb8b0-9c1b-4477-858a-4b5f62fba62e', 'we_6507891eef74469e766bc6ad', '01a24a6e-f931-7090-b754-f9f87094dc35', 1, 200, 1, '', NULL, '2026-12-06 08:18:36.486817+00');
INSERT INTO public.webhook_attempts VALUES (4, '820c844a-1766-4ff0-9e3e-8a443f437c55', 'we_6507891eef74469e766bc6ad', '01a24a6e-f95e-7ed2-bd7a-0122900d7810', 1, 200, 0, '', NULL, '2026-12-06 08:18:36.537102+00');
INSERT INTO public.webhook_attempts VALUES (5, '24ce71f1-c54e-4fe4-b7d1-1ac482dce2be', 'we_6507891eef74469e766bc6ad', '01a24a6e-f9b0-717d-8321-d39761fc9423', 1, 200, 0, '', NULL, '2026-12-06 08:18:36.63719+00');
INSERT INTO public.webhook_attempts VALUES (6, 'af74ccff-6231-47e8-b450-b1678e519a79', 'we_6507891eef74469e766bc6ad', '01a24a6e-f9e1-7bf9-bad0-63266e495377', 1, 200, 9, '', NULL, '2026-12-06 08:18:37.145333+00');
INSERT INTO public.webhook_attempts VALUES (7, 'c20dade0-f52c-4170-8169-beea8e8362ec', 'we_6507891eef74469e766bc6ad', '01a24a6e-fbc3-74f8-a0ae-b77be1147c09', 1, 200, 8, '', NULL, '2026-12-06 08:18:37.182324+00');
INSERT INTO public.webhook_attempts VALUES (8, '076c34b1-b5e2-40ee-b407-449cbbcdffe8', 'we_6507891eef74469e766bc6ad', '01a24a6e-fbcb-71cb-820e-9eb0018c1bc3', 1, 200, 9, '', NULL, '2026-12-06 08:18:37.184131+00');
INSERT INTO public.webhook_attempts VALUES (9, '6667ee03-ea66-4809-9cf7-dd3f5838463d', 'we_6507891eef74469e766bc6ad', '01a24a6f-0677-7bcd-a685-3d4f24b60982', 1, 200, 1, '', NULL, '2026-12-06 08:18:40.099125+00');
INSERT INTO public.webhook_attempts VALUES (10, 'e6576fd0-1c44-4b40-b8c7-6447bb278d6a', 'we_6507891eef74469e766bc6ad', '01a24a6f-0a36-7a4b-b784-51bd3c31e061', 1, 200, 1, '', NULL, '2026-12-06 08:18:41.188224+00');
INSERT INTO public.webhook_attempts VALUES (11, 'e738d7bf-7afb-44df-9f49-43e2b05ef414', 'we_6507891eef74469e766bc6ad', '01a24a6f-07e2-706d-8c03-3ccc1da32fec', 1, 200, 1, '', NULL, '2026-12-06 08:18:41.189108+00');
INSERT INTO public.webhook_attempts VALUES (12, '099a651a-1363-479f-b67f-fc8a47352a61', 'we_6507891eef74469e766bc6ad', '01a24a6f-2436-723d-9f6e-d4488f28e02b', 1, 200, 1, '', NULL, '2026-12-06 08:18:47.510755+00');
INSERT INTO public.webhook_attempts VALUES (13, 'de73c0d3-7f60-4517-b1cf-86e533b75782', 'we_6507891eef74469e766bc6ad', '01a24a6f-2434-7e71-b1cb-2662862abaca', 1, 200, 1, '', NULL, '2026-12-06 08:18:47.512465+00');
INSERT INTO public.webhook_attempts VALUES (14, 'f773f215-02ef-4dba-b09d-27b2fe5f13d1', 'we_6507891eef74469e766bc6ad', '01a24a6f-26be-7b57-bd2c-a4e8a4d47e5c', 1, 200, 1, '', NULL, '2026-12-06 08:18:48.189602+00');
INSERT INTO public.webhook_attempts VALUES (15, 'a99eff94-5e32-444a-a5a2-60ceb6481571', 'we_6507891eef74469e766bc6ad', '01a24a6f-26e9-7921-9957-8ef433e74bf5', 1, 200, 1, '', NULL, '2026-12-06 08:18:48.251391+00');
INSERT INTO public.webhook_attempts VALUES (16, '39ccdf09-8087-4bbf-835c-23034f840da0', 'we_6507891eef74469e766bc6ad', '01a24a6f-270f-726b-af3e-9635b3ca87b9', 1, 200, 1, '', NULL, '2026-12-06 08:18:48.253986+00');
INSERT INTO public.webhook_attempts VALUES (17, '2e3f383b-7c57-4118-9202-2be4132e2821', 'we_6507891eef74469e766bc6ad', '01a24a6f-2773-7247-b07c-7bab0a975114', 1, 200, 0, '', NULL, '2026-12-06 08:18:48.329318+00');
INSERT INTO public.webhook_attempts VALUES (18, '2ebe97ce-436b-4fab-b83a-49f39f08b4ba', 'we_6507891eef74469e766bc6ad', '01a24a6f-2771-7b92-9f33-fcdfe23687f2', 1, 200, 0, '', NULL, '2026-12-06 08:18:48.330148+00');
INSERT INTO public.webhook_attempts VALUES (19, 'e64674a9-e284-4dda-99d7-0ebc3fb1f4a5', 'we_6507891eef74469e766bc6ad', '01a24a6f-53c7-7642-a1d1-a2522e79511a', 1, 200, 2, '', NULL, '2026-12-06 08:18:59.671863+00');


--
-- Data for Name: webhook_deliveries; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.webhook_deliveries VALUES ('b33244c7-c2e3-4f50-9c47-8a2a594534e7', 'we_6507891eef74469e766bc6ad', '01a24a6e-dd67-7ac8-9e22-c35e4d3f7e39', 'succeeded', 1, '2026-12-06 08:18:29.384931+00', 200, NULL, '2026-12-06 08:18:29.355691+00', '2026-12-06 08:18:29.384931+00');
INSERT INTO public.webhook_deliveries VALUES ('62f6a3cc-ecd0-4670-80db-f7c9c742d6c4', 'we_6507891eef74469e766bc6ad', '01a24a6e-f8cd-7722-84d9-1ca1bbbc5eea', 'succeeded', 1, '2026-12-06 08:18:36.427131+00', 200, NULL, '2026-12-06 08:18:36.383202+00', '2026-12-06 08:18:36.427131+00');
INSERT INTO public.webhook_deliveries VALUES ('604fb8b0-9c1b-4477-858a-4b5f62fba62e', 'we_6507891eef74469e766bc6ad', '01a24a6e-f931-7090-b754-f9f87094dc35', 'succeeded', 1, '2026-12-06 08:18:36.486817+00', 200, NULL, '2026-12-06 08:18:36.469567+00', '2026-12-06 08:18:36.486817+00');
INSERT INTO public.webhook_deliveries VALUES ('820c844a-1766-4ff0-9e3e-8a443f437c55', 'we_6507891eef74469e766bc6ad', '01a24a6e-f95e-7ed2-bd7a-0122900d7810', 'succeeded', 1, '2026-12-06 08:18:36.537102+00', 200, NULL, '2026-12-06 08:18:36.519477+00', '2026-12-06 08:18:36.537102+00');
INSERT INTO public.webhook_deliveries VALUES ('24ce71f1-c54e-4fe4-b7d1-1ac482dce2be', 'we_6507891eef74469e766bc6ad', '01a24a6e-f9b0-717d-8321-d39761fc9423', 'succeeded', 1, '2026-12-06 08:18:36.63719+00', 200, NULL, '2026-12-06 08:18:36.595503+00', '2026-12-06 08:18:36.63719+00');
INSERT INTO public.webhook_deliveries VALUES ('af74ccff-6231-47e8-b450-b1678e519a79', 'we_6507891eef74469e766bc6ad', '01a24a6e-f9e1-7bf9-bad0-63266e495377', 'succeeded', 1, '2026-12-06 08:18:37.145333+00', 200, NULL, '2026-12-06 08:18:37.1197+00', '2026-12-06 08:18:37.145333+00');
INSERT INTO public.webhook_deliveries VALUES ('c20dade0-f52c-4170-8169-beea8e8362ec', 'we_6507891eef74469e766bc6ad', '01a24a6e-fbc3-74f8-a0ae-b77be1147c09', 'succeeded', 1, '2026-12-06 08:18:37.182324+00', 200, NULL, '2026-12-06 08:18:37.147641+00', '2026-12-06 08:18:37.182324+00');
INSERT INTO public.webhook_deliveries VALUES ('076c34b1-b5e2-40ee-b407-449cbbcdffe8', 'we_6507891eef74469e766bc6ad', '01a24a6e-fbcb-71cb-820e-9eb0018c1bc3', 'succeeded', 1, '2026-12-06 08:18:37.184131+00', 200, NULL, '2026-12-06 08:18:37.154137+00', '2026-12-06 08:18:37.184131+00');
INSERT INTO public.webhook_deliveries VALUES ('6667ee03-ea66-4809-9cf7-dd3f5838463d', 'we_6507891eef74469e766bc6ad', '01a24a6f-0677-7bcd-a685-3d4f24b60982', 'succeeded', 1, '2026-12-06 08:18:40.099125+00', 200, NULL, '2026-12-06 08:18:39.875151+00', '2026-12-06 08:18:40.099125+00');
INSERT INTO public.webhook_deliveries VALUES ('e6576fd0-1c44-4b40-b8c7-6447bb278d6a', 'we_6507891eef74469e766bc6ad', '01a24a6f-0a36-7a4b-b784-51bd3c31e061', 'succeeded', 1, '2026-12-06 08:18:41.188224+00', 200, NULL, '2026-12-06 08:18:41.11928+00', '2026-12-06 08:18:41.188224+00');
INSERT INTO public.webhook_deliveries VALUES ('e738d7bf-7afb-44df-9f49-43e2b05ef414', 'we_6507891eef74469e766bc6ad', '01a24a6f-07e2-706d-8c03-3ccc1da32fec', 'succeeded', 1, '2026-12-06 08:18:41.189108+00', 200, NULL, '2026-12-06 08:18:41.11928+00', '2026-12-06 08:18:41.189108+00');
INSERT INTO public.webhook_deliveries VALUES ('099a651a-1363-479f-b67f-fc8a47352a61', 'we_6507891eef74469e766bc6ad', '01a24a6f-2436-723d-9f6e-d4488f28e02b', 'succeeded', 1, '2026-12-06 08:18:47.510755+00', 200, NULL, '2026-12-06 08:18:47.479989+00', '2026-12-06 08:18:47.510755+00');
INSERT INTO public.webhook_deliveries VALUES ('de73c0d3-7f60-4517-b1cf-86e533b75782', 'we_6507891eef74469e766bc6ad', '01a24a6f-2434-7e71-b1cb-2662862abaca', 'succeeded', 1, '2026-12-06 08:18:47.512465+00', 200, NULL, '2026-12-06 08:18:47.479989+00', '2026-12-06 08:18:47.512465+00');
INSERT INTO public.webhook_deliveries VALUES ('f773f215-02ef-4dba-b09d-27b2fe5f13d1', 'we_6507891eef74469e766bc6ad', '01a24a6f-26be-7b57-bd2c-a4e8a4d47e5c', 'succeeded', 1, '2026-12-06 08:18:48.189602+00', 200, NULL, '2026-12-06 08:18:48.139363+00', '2026-12-06 08:18:48.189602+00');
INSERT INTO public.webhook_deliveries VALUES ('a99eff94-5e32-444a-a5a2-60ceb6481571', 'we_6507891eef74469e766bc6ad', '01a24a6f-26e9-7921-9957-8ef433e74bf5', 'succeeded', 1, '2026-12-06 08:18:48.251391+00', 200, NULL, '2026-12-06 08:18:48.2108+00', '2026-12-06 08:18:48.251391+00');
INSERT INTO public.webhook_deliveries VALUES ('39ccdf09-8087-4bbf-835c-23034f840da0', 'we_6507891eef74469e766bc6ad', '01a24a6f-270f-726b-af3e-9635b3ca87b9', 'succeeded', 1, '2026-12-06 08:18:48.253986+00', 200, NULL, '2026-12-06 08:18:48.2108+00', '2026-12-06 08:18:48.253986+00');
INSERT INTO public.webhook_deliveries VALUES ('2e3f383b-7c57-4118-9202-2be4132e2821', 'we_6507891eef74469e766bc6ad', '01a24a6f-2773-7247-b07c-7bab0a975114', 'succeeded', 1, '2026-12-06 08:18:48.329318+00', 200, NULL, '2026-12-06 08:18:48.311929+00', '2026-12-06 08:18:48.329318+00');
INSERT INTO public.webhook_deliveries VALUES ('2ebe97ce-436b-4fab-b83a-49f39f08b4ba', 'we_6507891eef74469e766bc6ad', '01a24a6f-2771-7b92-9f33-fcdfe23687f2', 'succeeded', 1, '2026-12-06 08:18:48.330148+00', 200, NULL, '2026-12-06 08:18:48.311929+00', '2026-12-06 08:18:48.330148+00');
INSERT INTO public.webhook_deliveries VALUES ('e64674a9-e284-4dda-99d7-0ebc3fb1f4a5', 'we_6507891eef74469e766bc6ad', '01a24a6f-53c7-7642-a1d1-a2522e79511a', 'succeeded', 1, '2026-12-06 08:18:59.671863+00', 200, NULL, '2026-12-06 08:18:59.662848+00', '2026-12-06 08:18:59.671863+00');


--
-- Data for Name: webhook_endpoints; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.webhook_endpoints VALUES ('we_6507891eef74469e766bc6ad', 'acme', 'http://127.0.0.1:29090/hook', '{}', 'upgrade', 'whsec_mdH7aC9Vxpnjyk7UrUrW8CKyNN+kDONT+Jqr5dH+jpc=', NULL, NULL, true, NULL, NULL, 1, '2026-12-06 08:18:29.350271+00', '2026-12-06 08:18:29.350271+00', 0, 0, NULL, NULL);


--
-- Data for Name: webhook_inflight; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: work_queue; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.work_queue VALUES ('node.resync', 'demo-node-2', 10, 1, '2026-12-06 08:23:07.165071+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('node.resync', 'demo-node-3', 13, 1, '2026-12-06 08:23:07.16597+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.resync', 'reservations', 14, 1, '2026-12-06 08:23:07.215243+00', NULL, NULL, 1, NULL);
INSERT INTO public.work_queue VALUES ('retention.prune', 'all', 4, 1, '2026-12-06 08:28:07.228691+00', NULL, NULL, 1, NULL);
INSERT INTO public.work_queue VALUES ('node.resync', 'demo-node-1', 7, 1, '2026-12-06 08:23:08.156715+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.expire', 'rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11', 15, 1, '2028-11-05 08:18:39+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.activate', 'rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4', 6, 1, '2026-12-08 08:18:36+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.activate', 'rsv_01a24a6e-f9a2-781b-8a5a-5ff9d26e2a26', 14, 1, '2026-12-09 08:18:36+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.expire', 'rsv_01a24a6e-f9df-7ea6-8f79-b6ebf52a1e0e', 1, 1, '2026-12-06 10:18:36+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.expire', 'rsv_01a24a6e-f959-7444-a522-b4cb947e7f89', 7, 1, '2026-12-06 09:18:36+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.expire', 'rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171', 2, 1, '2026-12-07 08:18:36+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.expire', 'rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4', 6, 1, '2026-12-08 10:18:36+00', NULL, NULL, 0, NULL);
INSERT INTO public.work_queue VALUES ('reservation.queue', 'pool:demo-pool', 13, 1, '2026-12-06 08:19:37.133389+00', NULL, NULL, 1, NULL);
INSERT INTO public.work_queue VALUES ('node.liveness-sweep', 'fleet', 15, 1, '2026-12-06 08:19:12.377757+00', NULL, NULL, 13, NULL);


--
-- Name: authz_changes_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.authz_changes_seq_seq', 4, true);


--
-- Name: device_bookings_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.device_bookings_id_seq', 7, true);


--
-- Name: goose_db_version_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.goose_db_version_id_seq', 33, true);


--
-- Name: node_commands_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.node_commands_seq_seq', 5, true);


--
-- Name: outbox_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.outbox_seq_seq', 73, true);


--
-- Name: webhook_attempts_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.webhook_attempts_id_seq', 19, true);


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
-- Name: goose_db_version goose_db_version_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.goose_db_version
    ADD CONSTRAINT goose_db_version_pkey PRIMARY KEY (id);


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
-- Name: allocations_reservation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX allocations_reservation ON public.allocations USING btree (reservation_id);


--
-- Name: api_tokens_tenant; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX api_tokens_tenant ON public.api_tokens USING btree (tenant_id, id);


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
-- Name: instances_reservation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX instances_reservation ON public.instances USING btree (reservation_id);


--
-- Name: node_commands_assignments; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX node_commands_assignments ON public.node_commands USING btree (node_id, allocation_id, seq) WHERE (kind = ANY (ARRAY['assign'::text, 'unassign'::text]));


--
-- Name: node_commands_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX node_commands_created ON public.node_commands USING btree (created_at);


--
-- Name: node_commands_open; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX node_commands_open ON public.node_commands USING btree (node_id, created_at) WHERE (state = ANY (ARRAY['queued'::text, 'sent'::text, 'running'::text]));


--
-- Name: node_credentials_node; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX node_credentials_node ON public.node_credentials USING btree (node_id, created_at);


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
-- Name: reservations_tenant; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX reservations_tenant ON public.reservations USING btree (tenant_id, id);


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
-- Name: rm_reservations_tenant; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_reservations_tenant ON public.rm_reservations USING btree (tenant_id, created_txid, created_seq);


--
-- Name: rm_usage_windows_allocation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_usage_windows_allocation ON public.rm_usage_windows USING btree (allocation_id);


--
-- Name: rm_usage_windows_order; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_usage_windows_order ON public.rm_usage_windows USING btree (window_start, key);


--
-- Name: rm_usage_windows_reservation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rm_usage_windows_reservation ON public.rm_usage_windows USING btree (reservation_id);


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
-- Name: work_queue_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX work_queue_due ON public.work_queue USING btree (shard, not_before);


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


