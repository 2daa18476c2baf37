package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/invariants"
)

// preempted is the preemption fixture after a real preemption: a prod
// create displaces two batch reservations of globex, one that had started
// (active, with an instance) and one that had not, while a standard one
// stays. The invariants hold, preemption's included: the one that had
// started keeps its booking up to the preemption only, the other's is
// gone, and globex's charges are refunded.
type preempted struct {
	*fixture
	running, later, preemptor core.Reservation
	instance                  string
}

func preemptTwo(t *testing.T) preempted {
	t.Helper()
	f, _ := preemptionFixture(t)
	start, end := window(0, 4)
	run := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, Start: start, End: end, PriorityClass: "batch"}).Reservation
	laterStart, _ := window(1, 4)
	later := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, Start: laterStart, End: end, PriorityClass: "batch"}).Reservation
	std := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, Start: start, End: end}).Reservation
	f.d.AdvanceSimClock(t, 10*time.Minute) // the running victim's booking has a past to keep
	f.activate(t, run)
	inst, err := f.h.CreateInstance(f.ctx, tenantB, commands.CreateInstance{ReservationID: run.ID})
	require.NoError(t, err)

	// Both batch GPUs are needed: the later one's is booked from 1 h on.
	pre := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, Start: f.d.Now(t), End: end, PriorityClass: "prod"}).Reservation
	require.Equal(t, core.ReservationBooked, pre.State)
	require.Equal(t, core.ReservationPreempted, f.reservationState(t, run.ID))
	require.Equal(t, core.ReservationPreempted, f.reservationState(t, later.ID))
	require.Equal(t, core.ReservationBooked, f.reservationState(t, std.ID), "not preemptible")
	require.Zero(t, f.quotaUsed(t, "globex", "gpu"), "both victims refunded")
	require.Equal(t, core.ProvisionStopping, get(t, f, inst.Instance.ID).State, "SIGTERM sent, the node has not reported")

	// What release left of the victims' bookings: the running one cut at
	// the preemption, the later one deleted.
	var cut, at time.Time
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT upper(b.during), rp.preempted_at FROM device_bookings b
		JOIN allocations a ON a.id = b.allocation_id JOIN reservation_preemptions rp ON rp.victim_id = a.reservation_id
		WHERE a.reservation_id = $1`, run.ID).Scan(&cut, &at))
	require.True(t, cut.Equal(at), "booking cut at %s, preempted at %s", cut, at)
	var n int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT count(*) FROM device_bookings b JOIN allocations a ON a.id = b.allocation_id
		WHERE a.reservation_id = $1`, later.ID).Scan(&n))
	require.Zero(t, n, "a booking that had not started is deleted")
	f.requireInvariants(t)
	return preempted{fixture: f, running: run, later: later, preemptor: pre, instance: inst.Instance.ID}
}

// violations are the names of the invariants Check reports.
func (f *fixture) violations(t *testing.T) map[string][]string {
	t.Helper()
	v, err := invariants.Check(f.ctx, f.d.Q)
	require.NoError(t, err)
	out := map[string][]string{}
	for _, x := range v {
		out[x.Invariant] = append(out[x.Invariant], x.Detail)
	}
	return out
}

// TestCheckerCatchesPreemptionBreaches breaks each rule of preemption with
// hand-written SQL after a real preemption, standing in for a buggy
// preemption, and the checker must name the breach; where a constraint
// guards the rule, the breach must fail while it stands.
func TestCheckerCatchesPreemptionBreaches(t *testing.T) {
	t.Parallel()
	const victims = `(SELECT victim_id FROM reservation_preemptions)`
	const running = `(SELECT a.reservation_id FROM allocations a JOIN device_bookings b ON b.allocation_id = a.id
	                   WHERE a.reservation_id IN ` + victims + `)`
	for _, c := range []struct {
		name, invariant, disable, breach string
		guarded                          bool
	}{{
		name: "victim not preemptible", invariant: invariants.PreemptionPriority,
		breach: `UPDATE reservations SET preemptible = false WHERE id IN ` + victims,
	}, {
		name: "victim's priority not the recorded one", invariant: invariants.PreemptionPriority,
		breach: `UPDATE reservation_preemptions SET victim_priority = victim_priority - 1`,
	}, {
		name: "preemptor's priority not the recorded one", invariant: invariants.PreemptionPriority,
		breach: `UPDATE reservations SET priority = priority + 1 WHERE id IN (SELECT preemptor_id FROM reservation_preemptions)`,
	}, {
		name: "preemptor not strictly higher", invariant: invariants.PreemptionPriority, guarded: true,
		disable: `ALTER TABLE reservation_preemptions DROP CONSTRAINT reservation_preemptions_strictly_higher;
		          UPDATE reservations SET priority = -100 WHERE id IN (SELECT preemptor_id FROM reservation_preemptions)`,
		breach: `UPDATE reservation_preemptions SET preemptor_priority = victim_priority`,
	}, {
		name: "preempted without a record", invariant: invariants.PreemptionPriority,
		breach: `DELETE FROM reservation_preemptions`,
	}, {
		name: "record of a reservation that is not preempted", invariant: invariants.PreemptionPriority,
		breach: `UPDATE reservations SET state = 'released' WHERE id IN ` + victims,
	}, {
		name: "preempted with a live allocation", invariant: invariants.PreemptedLiveBooking,
		breach: `UPDATE allocations SET released_at = NULL WHERE reservation_id IN ` + victims,
	}, {
		// The preemptor booked the atom from the preemption on.
		name: "running victim's booking not cut", invariant: invariants.PreemptedLiveBooking, guarded: true,
		disable: `ALTER TABLE device_bookings DROP CONSTRAINT device_bookings_no_overlap`,
		breach: `UPDATE device_bookings SET during = tstzrange(lower(during), upper(during) + interval '1 second', '[)')
		          WHERE allocation_id IN (SELECT id FROM allocations WHERE reservation_id IN ` + running + `)`,
	}, {
		name: "later victim's booking not deleted", invariant: invariants.PreemptedLiveBooking,
		breach: `INSERT INTO device_bookings (device_id, allocation_id, during)
		         SELECT a.device_ids[1], a.id, tstzrange(upper(r.during) + interval '1 hour', upper(r.during) + interval '2 hours', '[)')
		           FROM allocations a JOIN reservations r ON r.id = a.reservation_id
		          WHERE r.id IN ` + victims + ` AND r.id NOT IN ` + running,
	}, {
		name: "preemption without its refund", invariant: invariants.Quota,
		breach: `UPDATE quota_usage SET used = used + 1 WHERE tenant_id = 'globex' AND resource = 'gpu'`,
	}, {
		name: "instance of a preempted reservation running past its grace", invariant: invariants.PreemptionGrace,
		// As if its node had reported it stopped, and past grace 60 s + slack 60 s.
		disable: `UPDATE instances SET state = 'stopped' WHERE reservation_id IN ` + victims + `;
		          UPDATE compute_sim_clock SET ts = ts + interval '121 seconds' WHERE id = 1`,
		breach: `UPDATE instances SET state = 'running' WHERE reservation_id IN ` + victims,
	}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := preemptTwo(t)
			if c.guarded {
				_, err := p.d.Pool.Exec(p.ctx, c.breach)
				require.Error(t, err, "the guard must refuse the breach")
			}
			if c.disable != "" {
				_, err := p.d.Pool.Exec(p.ctx, c.disable)
				require.NoError(t, err)
			}
			tag, err := p.d.Pool.Exec(p.ctx, c.breach)
			require.NoError(t, err)
			require.NotZero(t, tag.RowsAffected())
			v := p.violations(t)
			require.NotEmpty(t, v[c.invariant], "want a %s violation, got %v", c.invariant, v)
		})
	}
}

// A preempted reservation's instance may stay stopping through its grace
// and the slack, not a second more: then the node must have reported it
// gone, and once it did, nothing is reported however late it is.
func TestPreemptionGraceInvariant(t *testing.T) {
	t.Parallel()
	p := preemptTwo(t)
	var at time.Time
	require.NoError(t, p.d.Pool.QueryRow(p.ctx, `SELECT preempted_at FROM reservation_preemptions WHERE victim_id = $1`,
		p.running.ID).Scan(&at))
	p.d.SetSimClock(t, at.Add(60*time.Second+invariants.PreemptionGraceSlack))
	p.requireInvariants(t)

	p.d.AdvanceSimClock(t, time.Second)
	v := p.violations(t)
	require.Len(t, v[invariants.PreemptionGrace], 1, "got %v", v)
	require.Contains(t, v[invariants.PreemptionGrace][0], p.instance)
	require.Len(t, v, 1, "nothing else: %v", v)

	// The daemon comes back and concludes the unassign: the workload is gone.
	d := p.connect(t, "n1", "j1", 0)
	for range 5 {
		sent := d.dispatch().ToSend
		if len(sent) == 0 {
			break
		}
		for _, s := range sent {
			d.report(s.ID, "succeeded", "", p.generation(t, "n1"))
		}
	}
	require.Equal(t, core.ProvisionStopped, get(t, p.fixture, p.instance).State)
	p.d.AdvanceSimClock(t, time.Hour)
	p.requireInvariants(t)
}
