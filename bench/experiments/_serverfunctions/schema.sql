DROP TABLE IF EXISTS quota, nodes, res, alloc, outbox, jobs CASCADE;
CREATE TABLE quota(tenant int, res text, used bigint NOT NULL, max bigint NOT NULL, PRIMARY KEY(tenant,res), CHECK (used <= max AND used >= 0));
INSERT INTO quota SELECT t, 'gpu', 0, 1000000 FROM generate_series(1,64) t;
CREATE TABLE nodes(id int PRIMARY KEY, free int NOT NULL, version int NOT NULL);
INSERT INTO nodes SELECT i, 1000000, 1 FROM generate_series(1,1000) i;
CREATE TABLE res(id bigserial PRIMARY KEY, tenant int NOT NULL, state text NOT NULL, version int NOT NULL, spec jsonb, created timestamptz DEFAULT now()); -- check-sql-now: allow (a scratch schema, not the product's)
CREATE INDEX ON res(tenant, state);
CREATE TABLE alloc(id bigserial PRIMARY KEY, res_id bigint NOT NULL, node int NOT NULL, released boolean default false);
CREATE INDEX ON alloc(res_id); CREATE INDEX ON alloc(node);
CREATE TABLE outbox(id bigserial PRIMARY KEY, txid xid8 NOT NULL DEFAULT pg_current_xact_id(), data jsonb);
CREATE INDEX ON outbox(txid, id);
CREATE TABLE jobs(id bigserial PRIMARY KEY, node int NOT NULL, payload jsonb, done boolean default false);
CREATE INDEX ON jobs(node, id) WHERE NOT done;

CREATE OR REPLACE FUNCTION create_f(t int, n int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE m bigint; best int; rid bigint; u bigint;
BEGIN
  SELECT max INTO m FROM quota WHERE tenant=t AND res='gpu';
  SELECT id INTO best FROM nodes WHERE id BETWEEN n AND n+9 ORDER BY free DESC, id LIMIT 1;
  UPDATE quota SET used=used+1 WHERE tenant=t AND res='gpu' AND used+1<=max RETURNING used INTO u;
  PERFORM 1 FROM nodes WHERE id=n FOR UPDATE;
  UPDATE nodes SET free=free-1, version=version+1 WHERE id=n;
  INSERT INTO res(tenant,state,version,spec) VALUES (t,'booked',1,'{"gpus":1,"model":"H100","start":"2026-12-06T00:00:00Z"}') RETURNING id INTO rid;
  INSERT INTO alloc(res_id,node) VALUES (rid, n);
  INSERT INTO outbox(data) VALUES (jsonb_build_object('type','reservation.created','id',rid,'tenant',t));
  INSERT INTO jobs(node,payload) VALUES (n, jsonb_build_object('assign',rid));
  RETURN rid;
END $$;
CREATE OR REPLACE FUNCTION release_f(t int, n int, rid bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record; a record;
BEGIN
  SELECT * INTO r FROM res WHERE id=rid;
  SELECT * INTO a FROM alloc WHERE res_id=rid;
  UPDATE quota SET used=used-1 WHERE tenant=t AND res='gpu' AND used-1>=0;
  UPDATE res SET state='released', version=version+1 WHERE id=rid AND version=r.version;
  UPDATE alloc SET released=true WHERE res_id=rid;
  UPDATE nodes SET free=free+1, version=version+1 WHERE id=n;
  INSERT INTO outbox(data) VALUES (jsonb_build_object('type','reservation.released','id',rid,'tenant',t));
  INSERT INTO jobs(node,payload) VALUES (n, jsonb_build_object('unassign',rid));
END $$;
