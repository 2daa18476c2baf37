-- +goose Up
-- defines compute_now()
--
-- Every time comparison in SQL reads compute_now(), never now(), so that tests
-- and the simulator can move time by hand: leases, deadlines and liveness then
-- expire in simulated time, deterministically.
CREATE EXTENSION IF NOT EXISTS btree_gist;

-- Tests only: compute_use_sim_clock(true) points compute_now() here.
CREATE TABLE compute_sim_clock (
  id int PRIMARY KEY CHECK (id = 1),
  ts timestamptz NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION compute_now() RETURNS timestamptz LANGUAGE sql STABLE AS $$ SELECT now() $$;
-- +goose StatementEnd

-- compute_use_sim_clock swaps the body of compute_now() between the real clock
-- and compute_sim_clock. It exists so that test helpers can switch clocks
-- through an ordinary (sqlc-generated) query instead of hand-written DDL.
-- Enabling it seeds the simulated clock at the real time if it has no row yet.
-- +goose StatementBegin
CREATE FUNCTION compute_use_sim_clock(enabled boolean) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  IF enabled THEN
    INSERT INTO compute_sim_clock (id, ts) VALUES (1, now()) ON CONFLICT (id) DO NOTHING;
    EXECUTE 'CREATE OR REPLACE FUNCTION compute_now() RETURNS timestamptz LANGUAGE sql STABLE AS $$ SELECT ts FROM compute_sim_clock WHERE id = 1 $$';
  ELSE
    EXECUTE 'CREATE OR REPLACE FUNCTION compute_now() RETURNS timestamptz LANGUAGE sql STABLE AS $$ SELECT now() $$';
  END IF;
END
$fn$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION compute_use_sim_clock(boolean);
DROP FUNCTION compute_now();
DROP TABLE compute_sim_clock;
