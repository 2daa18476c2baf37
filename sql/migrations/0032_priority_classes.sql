-- +goose Up
-- Priority classes (docs/concepts/priority.md): named by operators, each with
-- a value (higher is more important), whether reservations of the class may
-- be displaced by a strictly higher value (preemptible), and the grace a
-- displaced workload gets between SIGTERM and the kill. At most one class is
-- the default, taken by a reservation that names none. Classes are created,
-- never changed or deleted yet: a reservation copies the value and the flag
-- of its class when it is created.
CREATE TABLE priority_classes (
  name          text PRIMARY KEY CHECK (name ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
  value         integer NOT NULL CHECK (value BETWEEN -1000000000 AND 1000000000),
  preemptible   boolean NOT NULL,
  grace_seconds integer NOT NULL DEFAULT 30 CHECK (grace_seconds BETWEEN 0 AND 86400),
  description   text NOT NULL DEFAULT '' CHECK (length(description) <= 1024),
  is_default    boolean NOT NULL DEFAULT false,
  -- The identity that created it; 'migration' for the classes this file
  -- inserts, which have no priority_class.created event.
  created_by    text NOT NULL CHECK (created_by <> ''),
  version       bigint NOT NULL DEFAULT 1 CHECK (version > 0),
  created_at    timestamptz NOT NULL DEFAULT compute_now()
);
-- At most one default class.
CREATE UNIQUE INDEX priority_classes_one_default ON priority_classes ((true)) WHERE is_default;

-- The default class. Every reservation made before classes existed is of it:
-- value 0 and not preemptible, as they were.
INSERT INTO priority_classes (name, value, preemptible, grace_seconds, description, is_default, created_by)
VALUES ('standard', 0, false, 30, 'The default class: never preempted.', true, 'migration');

-- The classes a tenant may use besides the default, which every tenant may
-- use. Replaced whole by PUT /v1/tenants/{tenant}/priority-classes; the
-- version of the set (one event per change) lives in
-- tenant_priority_class_sets, a row once the set was first written.
CREATE TABLE tenant_priority_class_sets (
  tenant_id  text PRIMARY KEY REFERENCES tenants,
  version    bigint NOT NULL CHECK (version > 0),
  updated_at timestamptz NOT NULL DEFAULT compute_now()
);
CREATE TABLE tenant_priority_classes (
  tenant_id text NOT NULL REFERENCES tenant_priority_class_sets,
  class     text NOT NULL REFERENCES priority_classes,
  PRIMARY KEY (tenant_id, class)
);

-- A reservation's class, and the class's value and flag copied when it was
-- created. Existing reservations are of the default class. No foreign key:
-- its check would take a key-share lock on the class row in every create,
-- and with most creates of one class (the default) that one row turns
-- concurrent creates into multixacts (0.03 → 0.7 per reservation,
-- measured). The create reads the class in its first round trip; classes
-- are never deleted; compute check verifies every reservation's class
-- exists and matches what it copied (InvariantPriorityClasses).
ALTER TABLE reservations
  ADD COLUMN priority_class text NOT NULL DEFAULT 'standard',
  ADD COLUMN priority integer NOT NULL DEFAULT 0,
  ADD COLUMN preemptible boolean NOT NULL DEFAULT false;
-- From now on the create names them (ReservationCreate).
ALTER TABLE reservations
  ALTER COLUMN priority_class DROP DEFAULT,
  ALTER COLUMN priority DROP DEFAULT,
  ALTER COLUMN preemptible DROP DEFAULT;

-- The read model copies them from the reservation events; events written
-- before them lack the fields, which means the default class.
ALTER TABLE rm_reservations
  ADD COLUMN priority_class text NOT NULL DEFAULT 'standard',
  ADD COLUMN priority integer NOT NULL DEFAULT 0,
  ADD COLUMN preemptible boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE rm_reservations DROP COLUMN preemptible, DROP COLUMN priority, DROP COLUMN priority_class;
ALTER TABLE reservations DROP COLUMN preemptible, DROP COLUMN priority, DROP COLUMN priority_class;
DROP TABLE tenant_priority_classes;
DROP TABLE tenant_priority_class_sets;
DROP TABLE priority_classes;
