package commands_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

func TestReserveBooksAtomsCountersAndQuota(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, GPUModel: "a100", VCPU: 100, MemoryMB: 1024, DiskGB: 10})
	r := res.Reservation
	require.Equal(t, core.ReservationBooked, r.State)
	require.Equal(t, "n1", r.NodeID)
	require.Equal(t, []string{"GPU-n1-0", "GPU-n1-1"}, r.DeviceIDs)
	require.Equal(t, int64(1), r.Version)
	require.False(t, res.Position.IsZero())
	require.Equal(t, map[string]int64{"gpu": 2, "vcpu": 100, "memory": 1024, "disk": 10}, r.Charges)

	q, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota("acme", "gpu"))
	require.NoError(t, err)
	require.Equal(t, int64(2), q.Used)
	nr, err := f.d.Q.NodeResourceListByNode(f.ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, "vcpu", nr[2].Resource)
	require.Equal(t, int64(100), nr[2].Allocated, "100 vCPU fit 64 × ratio 2")
	f.requireInvariants(t)

	// Both GPUs are taken for the window: the next one is pending, says why,
	// and still holds its quota charge.
	p := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	require.Equal(t, core.ReservationPending, p.Reservation.State)
	require.Len(t, p.Reservation.Conditions, 1)
	require.Equal(t, core.ConditionUnschedulable, p.Reservation.Conditions[0].Type)
	require.Contains(t, p.Reservation.Conditions[0].Message, "n1: 0 free whole GPUs in the window, needs 1")
	q, err = f.d.Q.QuotaUsageGet(f.ctx, dbQuota("acme", "gpu"))
	require.NoError(t, err)
	require.Equal(t, int64(3), q.Used, "pending holds its charge")
	wq, err := f.d.Q.WorkQueueGet(f.ctx, dbWork(commands.KindReservationQueue, commands.PendingQueueKey("fra1-gpu", "")))
	require.NoError(t, err)
	require.Equal(t, pgtest30s(), wq.NotBefore.UTC())

	// A later window on the same GPUs is free.
	s, e := window(2, 4)
	later := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, Start: s, End: e})
	require.Equal(t, core.ReservationBooked, later.Reservation.State)
	f.requireInvariants(t)
}

func TestQuotaExceededIsFinal(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	f.quota(t, "acme", "gpu", 1)
	f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	s, e := window(0, 1)
	_, err := f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, Start: s, End: e})
	require.Equal(t, core.CodeQuotaExceeded, core.CodeOf(err))
	require.Contains(t, err.Error(), "1 used of 1")
	require.Equal(t, 1, f.countEvents(t, core.EventReservationBooked))
	require.Equal(t, 0, f.countEvents(t, core.EventReservationPending), "quota failure writes nothing")

	// Model quotas are charged when set.
	f.quota(t, "globex", "gpu:a100", 0)
	_, err = f.h.CreateReservation(f.ctx, tenantB, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, GPUModel: "a100", Start: s, End: e})
	require.Equal(t, core.CodeQuotaExceeded, core.CodeOf(err))

	// Lowering a quota below usage is refused clearly.
	_, err = f.h.SetQuota(f.ctx, operator, commands.SetQuota{Tenant: "acme", Resource: "vcpu", Max: 10})
	require.NoError(t, err, "nothing used yet")
	_, err = f.h.SetQuota(f.ctx, operator, commands.SetQuota{Tenant: "acme", Resource: "gpu", Max: 0})
	require.Equal(t, core.CodeConflict, core.CodeOf(err))
	require.Contains(t, err.Error(), "uses 1 gpu")
	f.requireInvariants(t)
}

func TestReserveValidatesAndAuthorises(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s, e := window(0, 1)
	for name, cmd := range map[string]commands.CreateReservation{
		"no place":        {GPUs: 1, Start: s, End: e},
		"pool and site":   {PoolID: "fra1-gpu", SiteID: "fra1", GPUs: 1, Start: s, End: e},
		"nothing":         {PoolID: "fra1-gpu", Start: s, End: e},
		"end before":      {PoolID: "fra1-gpu", GPUs: 1, Start: e, End: s},
		"bad profile":     {PoolID: "fra1-gpu", GPUs: 1, MIGProfile: "9g.1gb", Start: s, End: e},
		"mig and slots":   {PoolID: "fra1-gpu", GPUs: 1, MIGProfile: "1g.10gb", SlotKind: core.GPUMPS, Start: s, End: e},
		"negative memory": {PoolID: "fra1-gpu", MemoryMB: -1, Start: s, End: e},
		"huge model":      {PoolID: "fra1-gpu", GPUs: 1, GPUModel: strings.Repeat("y", core.MaxGPUModel+1), Start: s, End: e},
		"invisible model": {PoolID: "fra1-gpu", GPUs: 1, GPUModel: "a100\u202e", Start: s, End: e},
		"huge profile":    {PoolID: "fra1-gpu", GPUs: 1, MIGProfile: "1g.18014398509481985gb", Start: s, End: e},
	} {
		_, err := f.h.CreateReservation(f.ctx, tenantA, cmd)
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), name)
	}
	for name, c := range map[string]struct {
		cmd  commands.CreateReservation
		says string
	}{
		"no start":   {commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, End: e}, "start is required"},
		"no end":     {commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, Start: s}, "end is required"},
		"end before": {commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, Start: e, End: s}, "must be after start"},
		"empty":      {commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, Start: s, End: s}, "must be after start"},
		// --mig-profile without --gpus named what it asked for, not "nothing".
		"profile, no count": {commands.CreateReservation{PoolID: "fra1-gpu", MIGProfile: "1g.10gb", Start: s, End: e}, "needs gpus > 0"},
		"slots, no count":   {commands.CreateReservation{PoolID: "fra1-gpu", SlotKind: core.GPUTimeSlice, Start: s, End: e}, "needs gpus > 0"},
		"model, no count":   {commands.CreateReservation{PoolID: "fra1-gpu", GPUModel: "a100", Start: s, End: e}, "needs gpus > 0"},
	} {
		_, err := f.h.CreateReservation(f.ctx, tenantA, c.cmd)
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), name)
		require.Contains(t, err.Error(), c.says, "%s: the fault is named", name)
	}
	viewer := core.Actor{Tenant: "acme", Identity: "v", Role: core.RoleViewer}
	_, err := f.h.CreateReservation(f.ctx, viewer, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, Start: s, End: e})
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err))
	_, err = f.h.CordonNode(f.ctx, tenantA, commands.CordonNode{NodeID: "n1"})
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err))
	_, err = f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "nope", GPUs: 1, Start: s, End: e})
	require.Equal(t, core.CodeNotFound, core.CodeOf(err))
}

// A reservation is at most 90 days long, from when it is booked (one that
// began is booked from now): a longer create or extension is
// INVALID_ARGUMENT and writes nothing; exactly 90 days is accepted. The
// database holds every write to 366 days whatever the commands allow.
func TestReservationLengthIsBounded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	events := func() (n int) {
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM outbox").Scan(&n))
		return n
	}
	before := events()
	now := pgtest.SimEpoch
	long := commands.DefaultMaxReservationLength
	for name, cmd := range map[string]commands.CreateReservation{
		"a minute too long":             {PoolID: "fra1-gpu", GPUs: 1, Start: now, End: now.Add(long + time.Minute)},
		"to year 9999":                  {PoolID: "fra1-gpu", GPUs: 1, Start: now.Add(time.Hour), End: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
		"began a year ago, ends in 91d": {PoolID: "fra1-gpu", GPUs: 1, Start: now.Add(-365 * 24 * time.Hour), End: now.Add(91 * 24 * time.Hour)},
	} {
		_, err := f.h.CreateReservation(f.ctx, tenantA, cmd)
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), name)
		require.Contains(t, err.Error(), "a reservation is at most 90 days long", name)
	}
	require.Equal(t, before, events(), "nothing written")
	q, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota("acme", "gpu"))
	require.NoError(t, err)
	require.Zero(t, q.Used, "no charge left behind")

	// Began a year ago: booked from now, so 90 days from now fit.
	r := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: now.Add(-365 * 24 * time.Hour), End: now.Add(long)})
	require.Equal(t, core.ReservationBooked, r.Reservation.State)
	_, err = f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: r.Reservation.ID,
		NewEnd: now.Add(long + time.Second)})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err))
	require.Contains(t, err.Error(), "a reservation is at most 90 days long")

	short := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: now.Add(long), End: now.Add(long + time.Hour)})
	require.Equal(t, core.ReservationBooked, short.Reservation.State, "right after the first")
	_, err = f.d.Pool.Exec(f.ctx, "UPDATE reservations SET during = tstzrange(lower(during), lower(during) + interval '367 days') WHERE id = $1",
		short.Reservation.ID)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "reservations_max_length", pgErr.ConstraintName, "the database's ceiling")
	f.requireInvariants(t)
}

// A reservation starts at most a year ahead (DefaultMaxBookingHorizon): a
// later start is INVALID_ARGUMENT and writes nothing; the horizon itself
// is accepted.
func TestBookingHorizonIsBounded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	now := pgtest.SimEpoch
	horizon := commands.DefaultMaxBookingHorizon
	for name, start := range map[string]time.Time{
		"a second past the horizon": now.Add(horizon + time.Second),
		"year 9998":                 time.Date(9998, 12, 31, 0, 0, 0, 0, time.UTC),
	} {
		_, err := f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1,
			Start: start, End: start.Add(time.Hour)})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), name)
		require.Contains(t, err.Error(), "a reservation may start at most 366 days ahead", name)
	}
	var n int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM reservations").Scan(&n))
	require.Zero(t, n, "nothing written")

	r := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: now.Add(horizon), End: now.Add(horizon + time.Hour)})
	require.Equal(t, core.ReservationBooked, r.Reservation.State, "at the horizon")

	week := commands.New(f.d.Pool, commands.Config{MaxBookingHorizon: 7 * 24 * time.Hour})
	_, err := week.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1,
		Start: now.Add(8 * 24 * time.Hour), End: now.Add(8*24*time.Hour + time.Hour)})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "a configured horizon")
	require.Contains(t, err.Error(), "at most 7 days ahead")
}

func TestMIGAndSlotsFollowTheAtomRule(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", core.GPULayout{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "1g.10gb", "1g.10gb"}},
		core.GPULayout{Mode: core.GPUTimeSlice, Slots: 2})
	mig := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, MIGProfile: "1g.10gb"})
	require.Equal(t, []string{gpus[0] + "/mig-1", gpus[0] + "/mig-2"}, mig.Reservation.DeviceIDs)
	slot := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, SlotKind: core.GPUTimeSlice})
	require.Equal(t, []string{gpus[1] + "/s0", gpus[1] + "/s1"}, slot.Reservation.DeviceIDs)
	whole := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	require.Equal(t, core.ReservationPending, whole.Reservation.State, "non-exclusive GPUs are not bookable whole")
	f.requireInvariants(t)
}

func TestReserveOnSitePicksAnyPool(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.h.CreatePool(f.ctx, operator, commands.CreatePool{ID: "fra1-cloud", SiteID: "fra1", Kind: commands.PoolProvider})
	require.NoError(t, err)
	_, err = f.h.RegisterNode(f.ctx, operator, commands.RegisterNode{ID: "c1", PoolID: "fra1-cloud", VCPU: 8,
		MemoryMB: 1024, DiskGB: 10, GPUs: []commands.GPUInventory{{UUID: "GPU-c1", Model: "h100", MemoryMB: 81920, Layout: exclusive}}})
	require.NoError(t, err)
	res := f.reserve(t, tenantA, commands.CreateReservation{SiteID: "fra1", GPUs: 1, GPUModel: "h100"})
	require.Equal(t, "c1", res.Reservation.NodeID)
	f.requireInvariants(t)
}
