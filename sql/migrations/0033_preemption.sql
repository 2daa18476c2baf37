-- +goose Up
-- Preemption (docs/concepts/priority.md#preemption): a reservation that cannot
-- be placed may displace booked or active reservations of a strictly lower
-- priority whose class is preemptible. A displaced reservation ends in the
-- terminal state 'preempted', in the preemptor's transaction.
ALTER TABLE reservations DROP CONSTRAINT reservations_state_check;
ALTER TABLE reservations ADD CONSTRAINT reservations_state_check
  CHECK (state IN ('pending', 'booked', 'active', 'released', 'expired', 'cancelled', 'failed', 'preempted'));

-- One row per preempted reservation, written with the transition: who
-- displaced it, both priorities as they were, and the grace its workloads
-- were given. The CHECK is the rule that a reservation is only ever
-- displaced by a strictly higher priority; compute check verifies the
-- priorities against both reservations and the victim's preemptible flag
-- (InvariantPreemptionPriority). The preemptor's reference is deferred: it is
-- inserted after its victims end, once its own state is known (as
-- allocations reference their reservation).
CREATE TABLE reservation_preemptions (
  victim_id          text PRIMARY KEY REFERENCES reservations,
  preemptor_id       text NOT NULL REFERENCES reservations DEFERRABLE INITIALLY DEFERRED,
  victim_priority    integer NOT NULL,
  preemptor_priority integer NOT NULL,
  grace_seconds      integer NOT NULL CHECK (grace_seconds BETWEEN 0 AND 86400),
  preempted_at       timestamptz NOT NULL DEFAULT compute_now(),
  CONSTRAINT reservation_preemptions_strictly_higher CHECK (preemptor_priority > victim_priority)
);
CREATE INDEX reservation_preemptions_preemptor ON reservation_preemptions (preemptor_id);

-- +goose Down
DROP TABLE reservation_preemptions;
ALTER TABLE reservations DROP CONSTRAINT reservations_state_check;
ALTER TABLE reservations ADD CONSTRAINT reservations_state_check
  CHECK (state IN ('pending', 'booked', 'active', 'released', 'expired', 'cancelled', 'failed'));
