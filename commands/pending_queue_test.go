package commands_test

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

// poolLine is the waiting line of the seeded pool.
var poolLine = commands.PendingQueueKey(commandstest.Pool, "")

// queuePosition is a row of pending_queue_positions.
type queuePosition struct {
	id, tenant       string
	position, queued int
	usage            float64
	share            int
}

// positions is the line of scope as its last run recorded it, in order.
func (f *fixture) positions(t *testing.T, scope string) []queuePosition {
	t.Helper()
	rows, err := f.d.Pool.Query(f.ctx, `SELECT p.reservation_id, r.tenant_id, p.position, p.queued, p.tenant_usage, p.tenant_share
	  FROM pending_queue_positions p JOIN reservations r ON r.id = p.reservation_id
	 WHERE p.scope = $1 ORDER BY p.position`, scope)
	require.NoError(t, err)
	defer rows.Close()
	var out []queuePosition
	for rows.Next() {
		var p queuePosition
		require.NoError(t, rows.Scan(&p.id, &p.tenant, &p.position, &p.queued, &p.usage, &p.share))
		out = append(out, p)
	}
	require.NoError(t, rows.Err())
	return out
}

// bookedInOrder is the reservations booked after the event at seq, in the
// order their reservation.booked events were written.
func (f *fixture) bookedInOrder(t *testing.T, afterSeq int64) []string {
	t.Helper()
	rows, err := f.d.Pool.Query(f.ctx, `SELECT data->>'id' FROM outbox WHERE type = $1 AND seq > $2 ORDER BY seq`,
		core.EventReservationBooked, afterSeq)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		out = append(out, id)
	}
	require.NoError(t, rows.Err())
	return out
}

// lastSeq is the outbox sequence of the newest event.
func (f *fixture) lastSeq(t *testing.T) int64 {
	t.Helper()
	var seq int64
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT coalesce(max(seq), 0) FROM outbox").Scan(&seq))
	return seq
}

// state is a reservation's state in the write model.
func (f *fixture) state(t *testing.T, id string) core.State {
	t.Helper()
	var s string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT state FROM reservations WHERE id = $1", id).Scan(&s))
	return core.State(s)
}

// heldUsage is the closed form of the decayed GPU-hours of atoms held from
// startAgo to endAgo hours ago, at a half-life of h hours.
func heldUsage(atoms, h, startAgo, endAgo float64) float64 {
	return atoms * h / math.Ln2 * (math.Pow(2, -endAgo/h) - math.Pow(2, -startAgo/h))
}

// ids are the ids of reservations.
func ids(rs []commands.ReservationResult) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Reservation.ID
	}
	return out
}

// Issue 26's "done when": tenant A held every GPU of the pool for an hour,
// then floods the line with 100 one-GPU reservations; tenant B then asks
// for 5. As capacity frees, B's five are booked before any of A's backlog
// (B used nothing, A used 8 GPU-hours), and A's are then taken oldest
// first. Before the line, each pending reservation retried on its own
// timer: A's flood, older, took the GPUs first. The test fails with the
// line in creation order (A's first).
func TestFairShareServesTheLightTenantFirst(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", slices.Repeat([]core.GPULayout{exclusive}, 8)...)
	now := f.d.Now(t)
	hold := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 8, Start: now, End: now.Add(24 * time.Hour)})
	require.Equal(t, core.ReservationBooked, hold.Reservation.State)
	f.d.AdvanceSimClock(t, time.Hour)

	// A's flood, then B's five, one second apart: the line's last key is
	// the oldest first, so each has its own creation time.
	pend := func(actor core.Actor) commands.ReservationResult {
		t.Helper()
		now := f.d.AdvanceSimClock(t, time.Second)
		r := f.reserve(t, actor, commands.CreateReservation{GPUs: 1, Start: now, End: now.Add(12 * time.Hour)})
		require.Equal(t, core.ReservationPending, r.Reservation.State)
		return r
	}
	var flood, light []commands.ReservationResult
	for range 100 {
		flood = append(flood, pend(tenantA))
	}
	for range 5 {
		light = append(light, pend(tenantB))
	}
	// Every pending create woke the pool's line, after the retry interval
	// of the first: one work item for the whole line, none per reservation.
	var items, perReservation int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT count(*) FILTER (WHERE kind = $1 AND key = $2),
	       count(*) FILTER (WHERE kind = $3) FROM work_queue`, commands.KindReservationQueue, poolLine,
		commands.KindReservationPlace).Scan(&items, &perReservation))
	require.Equal(t, 1, items, "the pool's line is queued once")
	require.Zero(t, perReservation, "no reservation.place item per pending reservation any more")

	// Capacity frees: A gives its eight GPUs back. The line comes due.
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: hold.Reservation.ID})
	require.NoError(t, err)
	f.d.AdvanceSimClock(t, commands.DefaultPendingRetryInterval)
	seq := f.lastSeq(t)
	again, err := commandstest.RunQueue(f.ctx, f.h, poolLine)
	require.NoError(t, err)
	require.Equal(t, commands.DefaultPendingRetryInterval, again, "97 still wait: the line runs again after the retry interval")

	want := append(ids(light), ids(flood[:3])...)
	require.Equal(t, want, f.bookedInOrder(t, seq), "B's five first, then A's three oldest")
	for _, r := range flood[3:] {
		require.Equal(t, core.ReservationPending, f.state(t, r.Reservation.ID))
	}
	// Where the others stand: A's backlog, oldest first, behind the eight
	// that left the line; each with A's usage (about 8 GPU-hours) and share.
	line := f.positions(t, poolLine)
	require.Len(t, line, 97)
	for i, p := range line {
		require.Equal(t, flood[3+i].Reservation.ID, p.id)
		require.Equal(t, 9+i, p.position)
		require.Equal(t, 105, p.queued)
		require.Equal(t, 1, p.share)
		require.InDelta(t, heldUsage(8, 168, 1+105.0/3600+30.0/3600, 30.0/3600), p.usage, 1e-6,
			"8 GPUs from t0 until the release after the flood, 30 s ago")
	}

	// A run that comes too soon (a wake-up during the last run) does
	// nothing and is put off until the retry interval has passed.
	f.d.AdvanceSimClock(t, 10*time.Second)
	again, err = commandstest.RunQueue(f.ctx, f.h, poolLine)
	require.NoError(t, err)
	require.Equal(t, commands.DefaultPendingRetryInterval-10*time.Second, again)

	// More capacity frees: A's backlog is taken oldest first.
	for _, r := range flood[:3] {
		_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: r.Reservation.ID})
		require.NoError(t, err)
	}
	f.d.AdvanceSimClock(t, commands.DefaultPendingRetryInterval-10*time.Second)
	seq = f.lastSeq(t)
	_, err = commandstest.RunQueue(f.ctx, f.h, poolLine)
	require.NoError(t, err)
	require.Equal(t, ids(flood[3:6]), f.bookedInOrder(t, seq))
	line = f.positions(t, poolLine)
	require.Len(t, line, 94)
	require.Equal(t, flood[6].Reservation.ID, line[0].id)
	require.Equal(t, 4, line[0].position, "behind the three that left the line")
	require.Equal(t, 97, line[0].queued)
	f.requireInvariants(t)
}

// The line is ordered by usage divided by share, then priority, then age:
// with equal shares the tenant that used less goes first, whatever came
// first; a share of 2 halves a tenant's usage in the ranking; and within
// one tenant a higher priority class goes before an older reservation.
func TestFairShareOrderFollowsUsageOverShare(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", slices.Repeat([]core.GPULayout{exclusive}, 5)...)
	_, err := f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "urgent", Value: 100})
	require.NoError(t, err)
	_, err = f.h.SetTenantPriorityClasses(f.ctx, operator, commands.SetTenantPriorityClasses{Tenant: "acme", Classes: []string{"urgent"}})
	require.NoError(t, err)

	// A used 3 GPUs for an hour, B 2: A used 1.5 times as much.
	now := f.d.Now(t)
	used := []commands.ReservationResult{
		f.reserve(t, tenantA, commands.CreateReservation{GPUs: 3, Start: now, End: now.Add(time.Hour)}),
		f.reserve(t, tenantB, commands.CreateReservation{GPUs: 2, Start: now, End: now.Add(time.Hour)}),
	}
	f.d.AdvanceSimClock(t, time.Hour)
	for _, r := range used {
		require.NoError(t, commandstest.Expire(f.ctx, f.h, r.Reservation.ID))
	}
	// Six GPUs fit no node: these wait, and each run ranks them.
	big := func(actor core.Actor, class string) string {
		t.Helper()
		now := f.d.AdvanceSimClock(t, time.Second)
		r := f.reserve(t, actor, commands.CreateReservation{GPUs: 6, Start: now, End: now.Add(24 * time.Hour), PriorityClass: class})
		require.Equal(t, core.ReservationPending, r.Reservation.State)
		return r.Reservation.ID
	}
	aOld := big(tenantA, "")
	bOld := big(tenantB, "")
	aUrgent := big(tenantA, "urgent")

	rank := func() []queuePosition {
		t.Helper()
		f.d.AdvanceSimClock(t, commands.DefaultPendingRetryInterval)
		again, err := commandstest.RunQueue(f.ctx, f.h, poolLine)
		require.NoError(t, err)
		require.Equal(t, commands.DefaultPendingRetryInterval, again)
		return f.positions(t, poolLine)
	}
	order := func(line []queuePosition) []string {
		out := make([]string, len(line))
		for i, p := range line {
			out[i] = p.id
		}
		return out
	}

	line := rank()
	require.Equal(t, []string{bOld, aUrgent, aOld}, order(line), "equal shares: B used less; A's urgent before its older one")
	usageA, usageB := line[1].usage, line[0].usage
	require.InDelta(t, 1.5, usageA/usageB, 1e-9, "A used 1.5 times what B used")
	require.InDelta(t, heldUsage(2, 168, 1+33.0/3600, 33.0/3600), usageB, 1e-6, "2 GPUs for an hour that ended 33 s ago")

	// Share 2 for A: 1.5/2 of B's usage, so A goes first.
	_, err = f.h.SetTenantFairShare(f.ctx, operator, commands.SetTenantFairShare{Tenant: "acme", Share: 2})
	require.NoError(t, err)
	line = rank()
	require.Equal(t, []string{aUrgent, aOld, bOld}, order(line))
	require.Equal(t, 2, line[0].share)
	require.Equal(t, 1, line[2].share)

	// Share 4 for B: 2/4 of B's usage is below A's 3/2.
	_, err = f.h.SetTenantFairShare(f.ctx, operator, commands.SetTenantFairShare{Tenant: "globex", Share: 4})
	require.NoError(t, err)
	line = rank()
	require.Equal(t, []string{bOld, aUrgent, aOld}, order(line))
	for i := 1; i < len(line); i++ {
		require.LessOrEqual(t, line[i-1].usage/float64(line[i-1].share), line[i].usage/float64(line[i].share))
	}
}

// The decayed usage on known intervals, at a half-life of 2 hours, against
// a numerical integral of 2^(-age/H) over each allocation's held interval:
// 2 GPUs held from t0 for 3 hours, 1 GPU from t0+1h released at t0+2h, 1
// GPU booked for a window that has not started, and a tenant without
// allocations; read at t0+4h.
func TestFairShareUsageOnKnownIntervals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive, exclusive, exclusive)
	t0 := f.d.Now(t)
	f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, Start: t0, End: t0.Add(3 * time.Hour)})
	f.d.AdvanceSimClock(t, time.Hour)
	short := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: t0, End: t0.Add(10 * time.Hour)})
	require.Equal(t, core.ReservationBooked, short.Reservation.State, "booked from t0+1h, when it was placed")
	f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: t0.Add(5 * time.Hour), End: t0.Add(6 * time.Hour)})
	f.d.AdvanceSimClock(t, time.Hour)
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: short.Reservation.ID})
	require.NoError(t, err)
	f.d.AdvanceSimClock(t, 2*time.Hour)

	const h = 2.0 // hours
	// integral is the decayed GPU-hours of atoms held from s to e hours
	// after t0, read at 4 hours: the midpoint rule on a fine grid.
	integral := func(atoms, s, e float64) float64 {
		const n = 100000
		step := (e - s) / n
		sum := 0.0
		for i := range n {
			t := s + (float64(i)+0.5)*step
			sum += math.Pow(2, -(4-t)/h) * step
		}
		return atoms * sum
	}
	want := integral(2, 0, 3) + integral(1, 1, 2)

	rows, err := f.d.Pool.Query(f.ctx, "SELECT tenant_id, gpu_hours FROM fair_share_usage($1, $2) ORDER BY tenant_id",
		[]string{"acme", "globex", "acme"}, h*3600)
	require.NoError(t, err)
	got := map[string]float64{}
	for rows.Next() {
		var tenant string
		var v float64
		require.NoError(t, rows.Scan(&tenant, &v))
		got[tenant] = v
	}
	require.NoError(t, rows.Err())
	require.Len(t, got, 2, "one row per tenant named")
	require.InDelta(t, want, got["acme"], 1e-6)
	require.InDelta(t, 2.6378627455, got["acme"]-integral(1, 1, 2), 1e-6, "the 2-GPU allocation alone, by hand")
	require.InDelta(t, heldUsage(2, h, 4, 1)+heldUsage(1, h, 3, 2), got["acme"], 1e-6, "the closed form")
	require.Zero(t, got["globex"])
}

// tenants.set_fair_share: operators only, a share of 1 to 1,000,000, a
// tenant that exists; the share a tenant has (1 when never set) writes
// nothing and appends no event; a change writes the next version and one
// tenant.fair_share_set carrying it.
func TestSetTenantFairShare(t *testing.T) {
	t.Parallel()
	f := setup(t)
	set := func(actor core.Actor, tenant string, share int64) (commands.TenantFairShareResult, error) {
		return f.h.SetTenantFairShare(f.ctx, actor, commands.SetTenantFairShare{Tenant: tenant, Share: share})
	}
	_, err := set(tenantA, "acme", 5)
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err))
	for _, share := range []int64{0, -1, 1_000_001} {
		_, err = set(operator, "acme", share)
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "share %d", share)
	}
	_, err = set(operator, "initech", 2)
	require.Equal(t, core.CodeNotFound, core.CodeOf(err))
	_, err = set(operator, "Not A Tenant", 2)
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err))
	require.Zero(t, f.countEvents(t, core.EventTenantFairShareSet), "nothing refused was written")

	res, err := set(operator, "acme", 1)
	require.NoError(t, err)
	require.Equal(t, commands.TenantFairShareResult{Tenant: "acme", Share: 1}, res, "1 is every tenant's share: nothing to write")
	require.Zero(t, f.countEvents(t, core.EventTenantFairShareSet))

	res, err = set(operator, "acme", 1_000_000)
	require.NoError(t, err)
	require.Equal(t, int32(1_000_000), res.Share)
	require.Equal(t, int64(1), res.Version)
	require.False(t, res.Position.IsZero())
	res, err = set(operator, "acme", 1_000_000)
	require.NoError(t, err)
	require.Equal(t, int64(1), res.Version, "the same share again changes nothing")
	require.True(t, res.Position.IsZero())
	res, err = set(operator, "acme", 1)
	require.NoError(t, err)
	require.Equal(t, int64(2), res.Version)
	require.Equal(t, 2, f.countEvents(t, core.EventTenantFairShareSet))

	var tenant, subject string
	var data []byte
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT tenant_id, subject, data FROM outbox WHERE type = $1 ORDER BY seq DESC LIMIT 1`,
		core.EventTenantFairShareSet).Scan(&tenant, &subject, &data))
	require.Equal(t, "acme", tenant, "tenant-scoped")
	require.Equal(t, "tenants/acme/fair-share", subject)
	var ev core.TenantFairShareEventData
	require.NoError(t, json.Unmarshal(data, &ev))
	require.Equal(t, core.TenantFairShareEventData{Tenant: "acme", Share: 1, Version: 2}, ev)
	f.requireInvariants(t)
}

// An item of the old per-reservation retry, queued before the line
// existed, wakes the reservation's line now instead of placing it; for a
// reservation that no longer waits it does nothing.
func TestOldPlaceItemWakesTheLine(t *testing.T) {
	t.Parallel()
	f := setup(t)
	now := f.d.Now(t)
	p := f.reserve(t, tenantA, commands.CreateReservation{SiteID: commandstest.Site, GPUs: 1, Start: now, End: now.Add(time.Hour)})
	require.Equal(t, core.ReservationPending, p.Reservation.State, "no node yet")
	siteLine := commands.PendingQueueKey("", commandstest.Site)
	_, err := f.d.Pool.Exec(f.ctx, "DELETE FROM work_queue WHERE kind = $1", commands.KindReservationQueue)
	require.NoError(t, err)

	place := f.h.Reconcilers().ReservationPlace
	again, err := commandstest.Work(f.ctx, f.d.Pool, place, commands.KindReservationPlace, p.Reservation.ID)
	require.NoError(t, err)
	require.Zero(t, again)
	wq, err := f.d.Q.WorkQueueGet(f.ctx, dbWork(commands.KindReservationQueue, siteLine))
	require.NoError(t, err)
	require.Equal(t, now.UTC(), wq.NotBefore.UTC(), "the site's line, due now")

	f.node(t, "n1", exclusive)
	again, err = commandstest.RunQueue(f.ctx, f.h, siteLine)
	require.NoError(t, err)
	require.Zero(t, again, "nobody waits any more")
	require.Equal(t, core.ReservationBooked, f.state(t, p.Reservation.ID))
	require.Empty(t, f.positions(t, siteLine), "a booked reservation has no place in the line")

	_, err = f.d.Pool.Exec(f.ctx, "DELETE FROM work_queue WHERE kind = $1", commands.KindReservationQueue)
	require.NoError(t, err)
	_, err = commandstest.Work(context.Background(), f.d.Pool, place, commands.KindReservationPlace, p.Reservation.ID)
	require.NoError(t, err)
	_, err = f.d.Q.WorkQueueGet(f.ctx, dbWork(commands.KindReservationQueue, siteLine))
	require.Error(t, err, "a booked reservation wakes nothing")
}

// Reservations whose class may preempt are tried first, highest priority
// first: tried in fair-share order, a lighter tenant's batch reservation
// was booked and then preempted by a heavier tenant's prod one in the same
// run, ending preempted where it would have gone on waiting.
func TestLineTriesPreemptorsFirst(t *testing.T) {
	t.Parallel()
	f, _ := preemptionFixture(t) // four GPUs on n1; acme may use prod, globex batch
	now := f.d.Now(t)
	used := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 4, Start: now, End: now.Add(time.Hour)})
	f.d.AdvanceSimClock(t, time.Hour)
	require.NoError(t, commandstest.Expire(f.ctx, f.h, used.Reservation.ID)) // acme is the heavier tenant

	now = f.d.Now(t)
	blocker := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 4, Start: now, End: now.Add(24 * time.Hour)})
	batch := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 4, Start: now, End: now.Add(24 * time.Hour), PriorityClass: "batch"})
	prod := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 4, Start: now, End: now.Add(24 * time.Hour), PriorityClass: "prod"})
	require.Equal(t, core.ReservationPending, batch.Reservation.State)
	require.Equal(t, core.ReservationPending, prod.Reservation.State, "the standard blocker is not preemptible")

	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: blocker.Reservation.ID})
	require.NoError(t, err)
	f.d.AdvanceSimClock(t, commands.DefaultPendingRetryInterval)
	_, err = commandstest.RunQueue(f.ctx, f.h, poolLine)
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, f.reservationState(t, prod.Reservation.ID))
	require.Equal(t, core.ReservationPending, f.reservationState(t, batch.Reservation.ID),
		"the batch reservation goes on waiting, never booked and preempted in one run")
	f.requireInvariants(t)
}

// A run tries at most Config.PendingQueueBatch reservations, but those
// are not simply the first of the line: each tenant's first, then each
// tenant's second, and so on. Tenant A, whose usage (none) ranks it first,
// floods the line with more reservations than one run tries, none of which
// can ever fit (more vCPU than any node has); tenant B, which used GPUs
// before, waits for eight GPUs behind all of them. When the GPUs free, B's
// reservation is booked at the next run. Tried strictly in line order, the
// run spent every try on A's flood, and B waited while its GPUs stood idle,
// run after run.
func TestLineTriesEveryTenantPastAFlood(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// A short line, so that the flood is a few creates rather than 257.
	const batch = 8
	f.h = commands.New(f.d.Pool, commands.Config{PendingQueueBatch: batch})
	f.node(t, "n1", slices.Repeat([]core.GPULayout{exclusive}, 8)...)
	f.quota(t, commandstest.TenantA.Tenant, "vcpu", 1_000_000)
	now := f.d.Now(t)
	hold := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 8, Start: now, End: now.Add(24 * time.Hour)})
	require.Equal(t, core.ReservationBooked, hold.Reservation.State)
	f.d.AdvanceSimClock(t, time.Hour) // B has used GPUs; A has not

	var flood []commands.ReservationResult
	for range batch + 1 {
		now := f.d.Now(t)
		r := f.reserve(t, tenantA, commands.CreateReservation{VCPU: 1000, Start: now, End: now.Add(12 * time.Hour)})
		require.Equal(t, core.ReservationPending, r.Reservation.State)
		flood = append(flood, r)
	}
	now = f.d.AdvanceSimClock(t, time.Second)
	wait := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 8, Start: now, End: now.Add(12 * time.Hour)})
	require.Equal(t, core.ReservationPending, wait.Reservation.State)

	_, err := f.h.ReleaseReservation(f.ctx, tenantB, commands.ReleaseReservation{ReservationID: hold.Reservation.ID})
	require.NoError(t, err)
	f.d.AdvanceSimClock(t, commands.DefaultPendingRetryInterval)
	seq := f.lastSeq(t)
	again, err := commandstest.RunQueue(f.ctx, f.h, poolLine)
	require.NoError(t, err)
	require.Equal(t, commands.DefaultPendingRetryInterval, again, "A's flood still waits")
	require.Equal(t, []string{wait.Reservation.ID}, f.bookedInOrder(t, seq),
		"B's reservation is tried and booked, though A's whole flood ranks ahead of it")

	// The positions are still the line's: A's flood ahead of where B stood.
	line := f.positions(t, poolLine)
	require.Len(t, line, len(flood))
	for i, p := range line {
		require.Equal(t, flood[i].Reservation.ID, p.id)
		require.Equal(t, len(flood)+1, p.queued)
	}
	f.requireInvariants(t)
}
