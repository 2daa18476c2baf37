package projections_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/invariants"
	"github.com/bettercompute/compute/projections"
)

// heldVersusBilled is, per allocation, what the write model says it held
// and what its usage windows bill: the reserved interval, from the later of
// the reservation's start and the allocation's creation to the earlier of
// its end and the allocation's release, and the device time its bookings
// cover, both in whole milliseconds of the instants (so that an interval
// cut in two bills the same as the whole); against the sums of its
// windows' reservedMs and deviceMs.
const heldVersusBilled = `
WITH held AS (
  SELECT a.id, a.reservation_id, cardinality(a.device_ids) AS devices,
         greatest(lower(r.during), a.created_at) AS hs,
         least(upper(r.during), coalesce(a.released_at, 'infinity')) AS he
    FROM allocations a JOIN reservations r ON r.id = a.reservation_id
), booked AS (
  SELECT b.allocation_id,
         sum(floor(extract(epoch FROM upper(b.during)) * 1000) - floor(extract(epoch FROM lower(b.during)) * 1000))::bigint AS ms
    FROM device_bookings b GROUP BY b.allocation_id
), billed AS (
  SELECT allocation_id, sum(reserved_ms)::bigint AS reserved_ms, sum(device_ms)::bigint AS device_ms
    FROM rm_usage_windows GROUP BY allocation_id
)
SELECT h.reservation_id, h.id,
       greatest(floor(extract(epoch FROM h.he) * 1000) - floor(extract(epoch FROM h.hs) * 1000), 0)::bigint,
       coalesce(k.ms, 0), coalesce(w.reserved_ms, 0), coalesce(w.device_ms, 0), h.devices
  FROM held h LEFT JOIN booked k ON k.allocation_id = h.id LEFT JOIN billed w ON w.allocation_id = h.id
 ORDER BY h.reservation_id`

// heldBilled is one row of heldVersusBilled.
type heldBilled struct {
	reservation, allocation                    string
	heldMs, bookedMs, billedMs, billedDeviceMs int64
	devices                                    int32
}

// requireBilledIsHeld checks every allocation: its windows bill exactly
// the time it held, and its device time is what its bookings covered.
func (f *fixture) requireBilledIsHeld(t *testing.T, when string) map[string]heldBilled {
	t.Helper()
	rows, err := f.d.Pool.Query(f.ctx, heldVersusBilled)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]heldBilled{}
	for rows.Next() {
		var h heldBilled
		require.NoError(t, rows.Scan(&h.reservation, &h.allocation, &h.heldMs, &h.bookedMs, &h.billedMs, &h.billedDeviceMs, &h.devices))
		out[h.reservation] = h
		require.Equal(t, h.heldMs, h.billedMs, "%s: reservation %s held %d ms, billed %d", when, h.reservation, h.heldMs, h.billedMs)
		require.Equal(t, h.heldMs*int64(h.devices), h.billedDeviceMs, "%s: reservation %s device ms", when, h.reservation)
		if h.devices > 0 {
			require.Equal(t, h.bookedMs, h.billedDeviceMs, "%s: reservation %s: bookings against device ms", when, h.reservation)
		}
	}
	require.NoError(t, rows.Err())
	return out
}

// Every way a reservation's life can go bills what it held, to the
// millisecond, on instants that are not whole milliseconds (the database's
// clock has microseconds), across an hour, a day, a month and a leap day:
// released early, extended twice then released, expired at its end,
// booked for later and released before its start, preempted, given back
// with its node, MIG instances, slots and scalars only. A rebuild from the
// log gives the same windows.
func TestUsageWindowsBillWhatWasHeld(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	f.node(t, "n2", mig, slots)
	f.node(t, "n3", exclusive, exclusive)
	grace := int64(60)
	_, err := f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "batch", Value: -100,
		Preemptible: true, GraceSeconds: &grace})
	require.NoError(t, err)
	_, err = f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "prod", Value: 1000})
	require.NoError(t, err)
	_, err = f.h.SetTenantPriorityClasses(f.ctx, operator, commands.SetTenantPriorityClasses{Tenant: tenantB.Tenant,
		Classes: []string{"batch"}})
	require.NoError(t, err)
	_, err = f.h.SetTenantPriorityClasses(f.ctx, operator, commands.SetTenantPriorityClasses{Tenant: tenantA.Tenant,
		Classes: []string{"prod"}})
	require.NoError(t, err)

	// Leap day, half an hour before March, 0.6 ms into a millisecond.
	leap := time.Date(2032, 2, 29, 23, 30, 0, 600_000, time.UTC)
	f.d.SetSimClock(t, leap)
	march := time.Date(2032, 3, 1, 0, 0, 0, 0, time.UTC)

	early := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 2, Start: leap, End: march.Add(5 * time.Hour)})
	twice := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: leap, End: march.Add(time.Hour)})
	expires := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, MIGProfile: "3g.40gb", Start: march, End: march.Add(2 * time.Hour)})
	slot := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 2, SlotKind: core.GPUTimeSlice, Start: leap, End: march.Add(3 * time.Hour)})
	scalars := f.reserve(t, tenantA, commands.CreateReservation{VCPU: 4, MemoryMB: 1024, DiskGB: 5, Start: leap, End: march.Add(time.Hour)})
	later := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: march.Add(10 * time.Hour), End: march.Add(12 * time.Hour)})
	victim := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 2, PoolID: commandstest.Pool, Start: leap,
		End: march.Add(6 * time.Hour), PriorityClass: "batch"})
	for _, r := range []commands.ReservationResult{early, twice, expires, slot, scalars, later, victim} {
		require.Equal(t, core.ReservationBooked, r.Reservation.State, r.Reservation.ID)
	}

	// 23:59:59.9997 on the leap day: extend; into March, extend again.
	f.d.AdvanceSimClock(t, 29*time.Minute+59*time.Second+999_100*time.Microsecond)
	_, err = f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: twice.Reservation.ID,
		NewEnd: march.Add(2*time.Hour + 300*time.Microsecond)})
	require.NoError(t, err)
	f.d.AdvanceSimClock(t, 50*time.Minute+1700*time.Microsecond)
	_, err = f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: twice.Reservation.ID,
		NewEnd: march.Add(3*time.Hour + 900*time.Microsecond)})
	require.NoError(t, err)

	// 01:20 and a bit: release early, the slots, the later booking (not
	// begun: nothing held); a prod reservation preempts the victim.
	f.d.AdvanceSimClock(t, 30*time.Minute+123_456*time.Microsecond)
	for _, r := range []commands.ReservationResult{early, slot, later} {
		_, err = f.h.ReleaseReservation(f.ctx, operator, commands.ReleaseReservation{ReservationID: r.Reservation.ID})
		require.NoError(t, err)
	}
	pre := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, PriorityClass: "prod", Start: f.d.Now(t),
		End: march.Add(4 * time.Hour)})
	require.Equal(t, core.ReservationBooked, pre.Reservation.State)
	displaced, err := f.h.GetReservation(f.ctx, operator, victim.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationPreempted, displaced.State)

	// 02:47: the scalars ended at 01:00 but its expiry runs late; the MIG
	// instance expires at its end; the twice-extended one is released;
	// node n1's reservations are given back by an operator.
	f.d.AdvanceSimClock(t, 87*time.Minute+3*time.Microsecond)
	require.NoError(t, commandstest.Expire(f.ctx, f.h, scalars.Reservation.ID))
	require.NoError(t, commandstest.Expire(f.ctx, f.h, expires.Reservation.ID))
	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: twice.Reservation.ID})
	require.NoError(t, err)
	_, err = f.h.DrainNode(f.ctx, operator, commands.DrainNode{NodeID: pre.Reservation.NodeID})
	require.NoError(t, err)
	_, err = f.h.ReleaseNode(f.ctx, operator, commands.ReleaseNode{NodeID: pre.Reservation.NodeID})
	require.NoError(t, err)

	f.catchUp(t)
	held := f.requireBilledIsHeld(t, "live")
	violations, err := invariants.Check(f.ctx, f.d.Q)
	require.NoError(t, err)
	require.Empty(t, violations)
	require.Zero(t, held[later.Reservation.ID].heldMs, "released before its start")
	require.EqualValues(t, 2*time.Hour/time.Millisecond, held[expires.Reservation.ID].heldMs, "expired at its end")
	// 23:30:00.0006 to 01:00: the leap day's half hour, rounded down to
	// the millisecond at its start, and March's first hour.
	require.EqualValues(t, 90*time.Minute/time.Millisecond, held[scalars.Reservation.ID].heldMs)
	var keys []string
	var ms []int64
	windows, err := f.d.Q.RmUsageWindowListAll(f.ctx)
	require.NoError(t, err)
	for _, w := range windows {
		if w.ReservationID == scalars.Reservation.ID {
			keys, ms = append(keys, w.Key), append(ms, w.ReservedMs)
			require.True(t, w.Final)
		}
	}
	alloc := held[scalars.Reservation.ID].allocation
	require.Equal(t, []string{"cmp:" + alloc + ":2032-02-29T23:00:00Z", "cmp:" + alloc + ":2032-03-01T00:00:00Z"}, keys)
	require.Equal(t, []int64{1_800_000, 3_600_000}, ms)

	before, err := f.d.Q.RmUsageWindowListAll(f.ctx)
	require.NoError(t, err)
	_, err = projections.Rebuild(f.ctx, f.d.Pool, projections.NameUsageWindows)
	require.NoError(t, err)
	after, err := f.d.Q.RmUsageWindowListAll(f.ctx)
	require.NoError(t, err)
	require.Equal(t, before, after, "a rebuild from the log gives the same windows")
	f.requireBilledIsHeld(t, "rebuilt")
}

// `compute check` holds billing to what was held (invariants.UsageHeld):
// it passes on the windows the projection wrote, tolerates the millisecond
// that windows written before they were measured between rounded instants
// may lack, and names a reservation whose closed windows bill more or less
// than it held, bill device time for atoms it did not hold, or name an
// allocation that does not exist.
func TestCheckerCatchesUsageNotHeld(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	f.d.SetSimClock(t, at(0).Add(600*time.Microsecond))
	res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, VCPU: 2, Start: at(0), End: at(3)})
	id := res.Reservation.ID
	f.d.AdvanceSimClock(t, 100*time.Minute)
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: id})
	require.NoError(t, err)
	live := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: at(1), End: at(4)})
	f.catchUp(t)

	usageViolations := func() []string {
		t.Helper()
		all, err := invariants.Check(f.ctx, f.d.Q)
		require.NoError(t, err)
		var out []string
		for _, v := range all {
			if v.Invariant == invariants.UsageHeld {
				out = append(out, v.Detail)
			}
		}
		return out
	}
	require.Empty(t, usageViolations())

	for _, c := range []struct {
		name   string
		breach string
		undo   string
		caught bool
	}{{
		name:   "a window 1 ms short, as windows were rounded before",
		breach: `UPDATE rm_usage_windows SET reserved_ms = reserved_ms - 1, device_ms = device_ms - 2 WHERE key = (SELECT min(key) FROM rm_usage_windows WHERE reservation_id = $1)`,
		undo:   `UPDATE rm_usage_windows SET reserved_ms = reserved_ms + 1, device_ms = device_ms + 2 WHERE key = (SELECT min(key) FROM rm_usage_windows WHERE reservation_id = $1)`,
	}, {
		name:   "a window 2 ms short",
		breach: `UPDATE rm_usage_windows SET reserved_ms = reserved_ms - 2, device_ms = device_ms - 4 WHERE key = (SELECT min(key) FROM rm_usage_windows WHERE reservation_id = $1)`,
		undo:   `UPDATE rm_usage_windows SET reserved_ms = reserved_ms + 2, device_ms = device_ms + 4 WHERE key = (SELECT min(key) FROM rm_usage_windows WHERE reservation_id = $1)`,
		caught: true,
	}, {
		name:   "a window billed twice over",
		breach: `UPDATE rm_usage_windows SET reserved_ms = reserved_ms + 1000, device_ms = device_ms + 2000 WHERE key = (SELECT max(key) FROM rm_usage_windows WHERE reservation_id = $1)`,
		undo:   `UPDATE rm_usage_windows SET reserved_ms = reserved_ms - 1000, device_ms = device_ms - 2000 WHERE key = (SELECT max(key) FROM rm_usage_windows WHERE reservation_id = $1)`,
		caught: true,
	}, {
		name:   "device time for an atom not held",
		breach: `UPDATE rm_usage_windows SET devices = 3, device_ms = reserved_ms * 3 WHERE reservation_id = $1`,
		undo:   `UPDATE rm_usage_windows SET devices = 2, device_ms = reserved_ms * 2 WHERE reservation_id = $1`,
		caught: true,
	}, {
		name:   "an allocation the write model lacks",
		breach: `UPDATE rm_usage_allocations SET allocation_id = 'alc_gone' WHERE reservation_id = $1`,
		undo:   `UPDATE rm_usage_allocations SET allocation_id = (SELECT id FROM allocations WHERE reservation_id = $1) WHERE reservation_id = $1`,
		caught: true,
	}} {
		_, err := f.d.Pool.Exec(f.ctx, c.breach, id)
		require.NoError(t, err, c.name)
		got := usageViolations()
		if c.caught {
			require.Len(t, got, 1, c.name)
			require.Contains(t, got[0], id, c.name)
		} else {
			require.Empty(t, got, c.name)
		}
		_, err = f.d.Pool.Exec(f.ctx, c.undo, id)
		require.NoError(t, err, c.name)
		require.Empty(t, usageViolations(), "%s: undone", c.name)
	}

	// A live reservation's windows are not closed: not checked, even when
	// they still change.
	_, err = f.d.Pool.Exec(f.ctx, `UPDATE rm_usage_windows SET reserved_ms = 1, device_ms = 1 WHERE reservation_id = $1`,
		live.Reservation.ID)
	require.NoError(t, err)
	require.Empty(t, usageViolations())
}

// A usage-windows rebuild after the log was pruned replays no booking of a
// reservation booked before the oldest event kept. Such a reservation,
// still live, is billed all the same when it ends: the first of its events
// that the projection applies seeds its interval from the write model (its
// booking's time, its node's pool), whether that event extends it or ends
// it.
func TestUsageWindowsBillAReservationWhoseBookingWasPruned(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive, exclusive)
	f.d.SetSimClock(t, at(0).Add(700*time.Microsecond))
	extended := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 2, Start: at(0), End: at(10)})
	released := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 2, MemoryMB: 512, Start: at(0), End: at(10)})
	f.catchUp(t)

	// Two hours on, a day's retention... of one hour: both bookings go.
	f.d.AdvanceSimClock(t, 2*time.Hour)
	pruned, err := (&commands.Pruner{Pool: f.d.Pool, Retention: commands.Retention{Events: time.Hour}}).Prune(f.ctx, nil)
	require.NoError(t, err)
	require.Positive(t, pruned.Events)
	_, err = projections.Rebuild(f.ctx, f.d.Pool, projections.NameUsageWindows)
	require.NoError(t, err)
	intervals, err := f.d.Q.RmUsageAllocationListAll(f.ctx)
	require.NoError(t, err)
	require.Empty(t, intervals, "the rebuild replayed no booking")

	_, err = f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: extended.Reservation.ID, NewEnd: at(12)})
	require.NoError(t, err)
	f.d.AdvanceSimClock(t, 90*time.Minute+300*time.Microsecond)
	for _, r := range []commands.ReservationResult{extended, released} {
		_, err = f.h.ReleaseReservation(f.ctx, operator, commands.ReleaseReservation{ReservationID: r.Reservation.ID})
		require.NoError(t, err)
	}
	f.catchUp(t)

	held := f.requireBilledIsHeld(t, "booking pruned")
	for _, r := range []commands.ReservationResult{extended, released} {
		// 00:00:00.0007 to 03:30:00.0010, between instants rounded down
		// to the millisecond.
		require.EqualValues(t, 12_600_001, held[r.Reservation.ID].billedMs, r.Reservation.ID)
	}
	violations, err := invariants.Check(f.ctx, f.d.Q)
	require.NoError(t, err)
	require.Empty(t, violations)
	windows, err := f.d.Q.RmUsageWindowListAll(f.ctx)
	require.NoError(t, err)
	require.Len(t, windows, 8, "four hourly windows each, 00:00 to 03:30")
	for _, w := range windows {
		require.True(t, w.Final, w.Key)
		require.Equal(t, commandstest.Pool, w.PoolID, w.Key)
	}
}

// An extension rewrites only the windows it changes: a 90-day reservation
// extended by a second rewrites its last window, not its 2,160. A tenant
// extending one a second at a time made the projection rewrite every
// window at every batch. Its end still rewrites every window, once: each
// becomes final.
func TestUsageWindowsAnExtensionRewritesOnlyTheWindowsItChanges(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	start := f.d.Now(t)
	end := start.Add(89 * 24 * time.Hour)
	res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end})
	f.catchUp(t)
	// xmin is the transaction that wrote a row's current version.
	versions := func() map[string]string {
		rows, err := f.d.Pool.Query(f.ctx, "SELECT key, xmin::text FROM rm_usage_windows WHERE reservation_id = $1", res.Reservation.ID)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct{ k, x string }, error) {
			var v struct{ k, x string }
			return v, r.Scan(&v.k, &v.x)
		})
		require.NoError(t, err)
		m := map[string]string{}
		for _, v := range out {
			m[v.k] = v.x
		}
		return m
	}
	changed := func(before, after map[string]string) int {
		n := 0
		for k, x := range after {
			if before[k] != x {
				n++
			}
		}
		return n
	}
	before := versions()
	require.Len(t, before, 89*24)

	_, err := f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: res.Reservation.ID,
		NewEnd: end.Add(time.Second)})
	require.NoError(t, err)
	f.catchUp(t)
	after := versions()
	require.Len(t, after, 89*24+1, "the second past the old end is a window of its own")
	require.Equal(t, 1, changed(before, after), "only the new window is written")

	f.d.AdvanceSimClock(t, 90*time.Minute)
	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: res.Reservation.ID})
	require.NoError(t, err)
	f.catchUp(t)
	released := versions()
	require.Len(t, released, 2, "released half way through its second hour")
	require.Equal(t, 2, changed(after, released), "both kept windows become final")
	f.requireBilledIsHeld(t, "released")
}

// A victim cut back by a preemptor that starts later is billed until its
// new end, and the preemptor from its start: a batch reservation of both
// GPUs for 8 h, a prod one booked 5 min in for 6 h to 7 h. The victim's
// windows stop at 6 h (not at 5 min, as when it was preempted at once,
// which left 5 h 55 min billed to nobody); the preemptor's cover 6 h to
// 7 h; every allocation bills what it held, before and after a rebuild.
func TestCutBackVictimIsBilledUntilItsNewEnd(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	grace := int64(60)
	_, err := f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "batch", Value: -100,
		Preemptible: true, GraceSeconds: &grace})
	require.NoError(t, err)
	_, err = f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "prod", Value: 1000})
	require.NoError(t, err)
	_, err = f.h.SetTenantPriorityClasses(f.ctx, operator, commands.SetTenantPriorityClasses{Tenant: tenantB.Tenant,
		Classes: []string{"batch"}})
	require.NoError(t, err)
	_, err = f.h.SetTenantPriorityClasses(f.ctx, operator, commands.SetTenantPriorityClasses{Tenant: tenantA.Tenant,
		Classes: []string{"prod"}})
	require.NoError(t, err)

	f.d.SetSimClock(t, at(0))
	victim := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 2, Start: at(0), End: at(8), PriorityClass: "batch"}).Reservation
	require.NoError(t, commandstest.Activate(f.ctx, f.h, victim.ID))
	f.d.AdvanceSimClock(t, 5*time.Minute)
	pre := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, Start: at(6), End: at(7), PriorityClass: "prod"}).Reservation
	require.Equal(t, core.ReservationBooked, pre.State)

	f.d.AdvanceSimClock(t, at(6).Sub(f.d.Now(t)))
	require.NoError(t, commandstest.Expire(f.ctx, f.h, victim.ID))
	require.NoError(t, commandstest.Activate(f.ctx, f.h, pre.ID))
	f.d.AdvanceSimClock(t, time.Hour)
	require.NoError(t, commandstest.Expire(f.ctx, f.h, pre.ID))

	f.catchUp(t)
	held := f.requireBilledIsHeld(t, "live")
	require.EqualValues(t, 6*time.Hour/time.Millisecond, held[victim.ID].heldMs, "the victim until its new end")
	require.EqualValues(t, time.Hour/time.Millisecond, held[pre.ID].heldMs, "the preemptor from its start")
	windows, err := f.d.Q.RmUsageWindowListAll(f.ctx)
	require.NoError(t, err)
	var victimMs int64
	for _, w := range windows {
		if w.ReservationID == victim.ID {
			require.True(t, w.Final)
			victimMs += w.ReservedMs
		}
	}
	require.EqualValues(t, 6*time.Hour/time.Millisecond, victimMs)
	violations, err := invariants.Check(f.ctx, f.d.Q)
	require.NoError(t, err)
	require.Empty(t, violations)

	_, err = projections.Rebuild(f.ctx, f.d.Pool, projections.NameUsageWindows)
	require.NoError(t, err)
	f.requireBilledIsHeld(t, "rebuilt")
}
