package queries_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/queries"
)

// Read-your-writes: a query given the position a command returned waits
// until the projection has passed it, and then shows the write. The
// dispatchers run in a goroutine; nothing sleeps.
func TestMinPositionReadsYourWrites(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 2)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, d := range f.disps {
		wg.Go(func() { d.Run(ctx, 5*time.Millisecond, nil) })
	}
	f.q.WaitTimeout = waitFor
	f.q.PollInterval = time.Millisecond

	for range 5 {
		res := f.reserve(t, tenantA, 0, 2)
		got, err := f.q.GetReservation(f.ctx, tenantA, res.Reservation.ID, res.Position)
		require.NoError(t, err)
		require.Equal(t, res.Reservation.Version, got.Version)
		rel, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: res.Reservation.ID})
		require.NoError(t, err)
		items, _, err := f.q.ListReservations(f.ctx, tenantA, queries.ListReservations{State: "released", MinPosition: rel.Position})
		require.NoError(t, err)
		require.Contains(t, ids(items), res.Reservation.ID, "the release is visible at its position")
		n, err := f.q.GetNode(f.ctx, operator, "n1", rel.Position)
		require.NoError(t, err)
		require.Zero(t, n.LiveReservations)
	}
}

// A projection of the same process wakes the minPosition waits when it
// saves its cursor (Service.CursorsMoved, as compute serve wires it), so a
// read of one's own write does not wait out the poll: here the poll is an
// hour and the reads still answer.
func TestMinPositionWokenByAProjectionOfThisProcess(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 2)
	ctx, cancel := context.WithCancel(f.ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, d := range f.disps {
		d.AfterBatch = f.q.CursorsMoved
		wg.Go(func() { d.Run(ctx, 5*time.Millisecond, nil) })
	}
	f.q.WaitTimeout = waitFor
	f.q.PollInterval = time.Hour

	for range 3 {
		res := f.reserve(t, tenantA, 0, 2)
		got, err := f.q.GetReservation(f.ctx, tenantA, res.Reservation.ID, res.Position)
		require.NoError(t, err)
		require.Equal(t, res.Reservation.Version, got.Version)
	}
}

// When the projection does not reach the position in time, the query is
// UNAVAILABLE rather than a stale answer.
func TestMinPositionTimesOutUnavailable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 1)
	res := f.reserve(t, tenantA, 0, 2) // no dispatcher runs
	f.q.WaitTimeout = 50 * time.Millisecond
	_, err := f.q.GetReservation(f.ctx, tenantA, res.Reservation.ID, res.Position)
	require.Equal(t, core.CodeUnavailable, core.CodeOf(err))
	require.ErrorContains(t, err, "reservations read model")

	f.catchUp(t, res.Position)
	got, err := f.q.GetReservation(f.ctx, tenantA, res.Reservation.ID, res.Position)
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, got.State)
}

// A minPosition this database never numbered (another installation's, or
// one from before a restore) is INVALID_ARGUMENT at once, not a wait that
// ends in UNAVAILABLE and tells the client to retry for ever.
func TestMinPositionAheadOfTheLogIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 1)
	res := f.reserve(t, tenantA, 0, 2)
	f.q.WaitTimeout = time.Hour // never reached: the answer comes before any wait
	ahead := outbox.Position{TxID: 1 << 62, Seq: 1}
	_, err := f.q.GetReservation(f.ctx, tenantA, res.Reservation.ID, ahead)
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "ahead of this event log")
}

// A minPosition below the log's head where no event sits names a write this
// log does not have: one lost when the database was restored to an earlier
// point, whose transaction id the log has since passed. It is refused even
// when the read models are past it, where answering would show the client
// a model without the write it asked to see. One below the oldest retained
// event is taken: retention may have pruned its event.
func TestMinPositionOfNoEventIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 4)
	first := f.reserve(t, tenantA, 0, 1)
	later := f.reserve(t, tenantA, 0, 1)
	f.catchUp(t, later.Position)
	f.q.WaitTimeout = time.Hour // the read model is past both: nothing to wait for

	lost := outbox.Position{TxID: first.Position.TxID, Seq: first.Position.Seq + 100}
	require.True(t, lost.Less(later.Position))
	_, err := f.q.GetReservation(f.ctx, tenantA, later.Reservation.ID, lost)
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "no event of this log")
	_, _, err = f.q.ListReservations(f.ctx, tenantA, queries.ListReservations{MinPosition: lost})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%v", err)

	got, err := f.q.GetReservation(f.ctx, tenantA, later.Reservation.ID, later.Position)
	require.NoError(t, err)
	require.Equal(t, later.Reservation.ID, got.ID)
	pruned := outbox.Position{TxID: 1, Seq: 0} // below every event this test's log holds
	_, err = f.q.GetReservation(f.ctx, tenantA, later.Reservation.ID, pruned)
	require.NoError(t, err)
}

// Tenants see only their own reservations; another tenant's is NOT_FOUND;
// operators see all and can narrow to one tenant.
func TestReservationsAreTenantScoped(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 4)
	a := f.reserve(t, tenantA, 0, 2)
	b := f.reserve(t, tenantB, 0, 2)
	f.catchUp(t, b.Position)

	_, err := f.q.GetReservation(f.ctx, tenantA, b.Reservation.ID, outbox.Position{})
	require.Equal(t, core.CodeNotFound, core.CodeOf(err))
	_, err = f.q.GetReservation(f.ctx, tenantA, "rsv_nope", outbox.Position{})
	require.Equal(t, core.CodeNotFound, core.CodeOf(err), "absent and foreign look the same")
	got, err := f.q.GetReservation(f.ctx, operator, b.Reservation.ID, outbox.Position{})
	require.NoError(t, err)
	require.Equal(t, "globex", got.Tenant)

	items, _, err := f.q.ListReservations(f.ctx, tenantA, queries.ListReservations{Tenant: "globex"})
	require.NoError(t, err)
	require.Equal(t, []string{a.Reservation.ID}, ids(items), "a tenant cannot widen its scope")
	items, _, err = f.q.ListReservations(f.ctx, operator, queries.ListReservations{})
	require.NoError(t, err)
	require.Equal(t, []string{a.Reservation.ID, b.Reservation.ID}, ids(items))
	items, _, err = f.q.ListReservations(f.ctx, operator, queries.ListReservations{Tenant: "globex"})
	require.NoError(t, err)
	require.Equal(t, []string{b.Reservation.ID}, ids(items))

	_, _, err = f.q.ListNodes(f.ctx, tenantA, queries.ListNodes{})
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err))
	w, _, err := f.q.ListUsageWindows(f.ctx, tenantB, queries.ListUsageWindows{})
	require.NoError(t, err)
	for _, x := range w {
		require.Equal(t, "globex", x.Tenant)
	}
	require.Len(t, w, 2, "b's two hours")
}

// The list shows what each reservation asked for, as its detail does: the
// request travels in the events into the read model.
func TestListShowsTheRequest(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 4)
	gpus, err := f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 2,
		VCPU: 4, MemoryMB: 2048, Start: at(0), End: at(2)})
	require.NoError(t, err)
	cpus, err := f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", VCPU: 3,
		Start: at(0), End: at(2)})
	require.NoError(t, err)
	f.catchUp(t, cpus.Position)

	items, _, err := f.q.ListReservations(f.ctx, tenantA, queries.ListReservations{})
	require.NoError(t, err)
	require.Equal(t, []string{gpus.Reservation.ID, cpus.Reservation.ID}, ids(items))
	require.Equal(t, core.ReservationSpec{GPU: core.GPURequest{Count: 2, Kind: core.AtomGPU}, VCPU: 4, MemoryMB: 2048,
		Tolerations: []string{}}, items[0].Spec)
	require.Equal(t, core.ReservationSpec{VCPU: 3, Tolerations: []string{}}, items[1].Spec, "no GPU: no GPU kind")
	for _, it := range items {
		got, err := f.q.GetReservation(f.ctx, tenantA, it.ID, outbox.Position{})
		require.NoError(t, err)
		require.Equal(t, it.Spec, got.Spec, "the list and the detail agree")
	}
}

// Paging with small limits visits every item exactly once, in order, even
// when items are created between pages.
func TestPaginationHasNoGapsOrDuplicates(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for i := range 4 {
		f.node(t, "n"+string(rune('a'+i)), 3)
	}
	var want []string
	var last outbox.Position
	for range 7 {
		r := f.reserve(t, tenantA, 0, 2)
		want, last = append(want, r.Reservation.ID), r.Position
	}
	f.catchUp(t, last)

	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		items, next, err := f.q.ListReservations(f.ctx, tenantA, queries.ListReservations{Cursor: cursor, Limit: 3})
		require.NoError(t, err)
		got = append(got, ids(items)...)
		if pages == 0 {
			r := f.reserve(t, tenantA, 0, 2) // created while paging: shows up at the end
			want = append(want, r.Reservation.ID)
			f.catchUp(t, r.Position)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, want, got)

	var nodes []string
	cursor = ""
	for {
		items, next, err := f.q.ListNodes(f.ctx, operator, queries.ListNodes{PoolID: "fra1-gpu", Cursor: cursor, Limit: 3})
		require.NoError(t, err)
		for _, n := range items {
			nodes = append(nodes, n.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, []string{"na", "nb", "nc", "nd"}, nodes)

	var windows []string
	cursor = ""
	for {
		items, next, err := f.q.ListUsageWindows(f.ctx, tenantA, queries.ListUsageWindows{Cursor: cursor, Limit: 4})
		require.NoError(t, err)
		for _, w := range items {
			windows = append(windows, w.Key)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	require.Len(t, windows, 16, "8 reservations of 2 hours")
	seen := map[string]bool{}
	for _, k := range windows {
		require.False(t, seen[k], "duplicate %s", k)
		seen[k] = true
	}

	_, _, err := f.q.ListNodes(f.ctx, operator, queries.ListNodes{Cursor: cursor + "x"})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err))
	_, _, err = f.q.ListReservations(f.ctx, tenantA, queries.ListReservations{Limit: 501})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err))
}

func ids(rs []queries.Reservation) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}
