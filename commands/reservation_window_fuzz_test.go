package commands_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/invariants"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// Reservation windows are validated in the commands (a start and an end
// after it, a start in the past booked from now, an extension strictly
// later) and stored in PostgreSQL, whose timestamps have microsecond
// precision and a range of their own. FuzzReservationWindow creates,
// extends and ends reservations with fuzzed windows on one database and
// holds every outcome to: a refusal is INVALID_ARGUMENT or CONFLICT (never
// an unclassified error, which the API serves as 500); a reservation that
// was accepted has a non-empty window as stored, starting no earlier than
// now, that is the window the command returned; and the torture
// invariants hold after every step.
//
// Times are limited to what the API can send: RFC 3339 has four-digit
// years, so [0000-01-01, 9999-12-31T23:59:59.999999999Z]. Offsets beyond
// that saturate at the bounds, so the extremes are tried often.
func FuzzReservationWindow(f *testing.F) {
	fx := newWindowFixture(f)
	f.Fuzz(func(t *testing.T, startSec, endSec, extendSec int64, nanos uint64, gpus uint8) {
		ctx := context.Background()
		start := apiTime(pgtest.SimEpoch.Unix(), startSec, int64(nanos%1e9))
		end := apiTime(pgtest.SimEpoch.Unix(), endSec, int64(nanos/1e9%1e9))
		cmd := commands.CreateReservation{PoolID: "fuzz-pool", GPUs: int(gpus % 3), VCPU: 1, Start: start, End: end}
		res, err := fx.h.CreateReservation(ctx, windowTenant, cmd)
		if err != nil {
			requireRefusal(t, err, "create [%s, %s)", start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
			return
		}
		id := res.Reservation.ID
		defer fx.end(t, id)
		fx.requireStored(t, res.Reservation, "create [%s, %s)", start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
		require.False(t, res.Reservation.Start.Before(fx.now), "a reservation starts no earlier than now")

		newEnd := apiTime(res.Reservation.End.Unix(), extendSec, int64(nanos/1e18))
		ext, err := fx.h.ExtendReservation(ctx, windowTenant, commands.ExtendReservation{ReservationID: id, NewEnd: newEnd})
		if err != nil {
			requireRefusal(t, err, "extend %s [%s, %s) to %s", id, res.Reservation.Start.Format(time.RFC3339Nano),
				res.Reservation.End.Format(time.RFC3339Nano), newEnd.Format(time.RFC3339Nano))
			return
		}
		fx.requireStored(t, ext.Reservation, "extend to %s", newEnd.Format(time.RFC3339Nano))
	})
}

// windowTenant makes the fuzzed reservations.
var windowTenant = core.Actor{Tenant: "acme", Identity: "fuzz@acme", Role: core.RoleMember}

// apiTime is base+offset seconds (plus nsec), saturated to the times an
// RFC 3339 timestamp can name.
func apiTime(base, offset, nsec int64) time.Time {
	minT := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	maxT := time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	sec := base + offset
	switch {
	case offset > 0 && sec < base, sec > maxT.Unix():
		return maxT
	case offset < 0 && sec > base, sec < minT.Unix():
		return minT
	}
	return time.Unix(sec, nsec).UTC()
}

// requireRefusal requires err to be a refusal the API answers with 4xx.
func requireRefusal(t *testing.T, err error, format string, args ...any) {
	t.Helper()
	code := core.CodeOf(err)
	if code != core.CodeInvalidArgument && code != core.CodeConflict {
		t.Fatalf(format+": want INVALID_ARGUMENT or CONFLICT, got %s: %v", append(args, code, err)...)
	}
}

// windowFixture is one database for a whole fuzz run: a pool with a node
// of two exclusive GPUs and a tenant with quota to spare.
type windowFixture struct {
	h   *commands.Handlers
	pg  *pgtest.DB
	now time.Time
}

func newWindowFixture(tb testing.TB) *windowFixture {
	tb.Helper()
	ctx := context.Background()
	pg := pgtest.New(tb)
	fx := &windowFixture{h: commands.New(pg.Pool, commands.Config{}), pg: pg, now: pg.Now(tb)}
	op := core.Actor{Tenant: "ops", Identity: "root@ops", Role: core.RoleOperator}
	require.NoError(tb, pg.Q.TenantEnsure(ctx, "acme"))
	_, err := fx.h.CreateSite(ctx, op, commands.CreateSite{ID: "fuzz-site", Name: "Fuzz"})
	require.NoError(tb, err)
	_, err = fx.h.CreatePool(ctx, op, commands.CreatePool{ID: "fuzz-pool", SiteID: "fuzz-site", Kind: commands.PoolBareMetal})
	require.NoError(tb, err)
	_, err = fx.h.RegisterNode(ctx, op, commands.RegisterNode{ID: "fuzz-n1", PoolID: "fuzz-pool", VCPU: 64, MemoryMB: 1024, DiskGB: 10,
		GPUs: []commands.GPUInventory{
			{UUID: "GPU-fuzz-0", Model: "a100", MemoryMB: 81920, Layout: core.GPULayout{Mode: core.GPUExclusive}},
			{UUID: "GPU-fuzz-1", Model: "a100", MemoryMB: 81920, Layout: core.GPULayout{Mode: core.GPUExclusive}},
		}})
	require.NoError(tb, err)
	for _, res := range []string{"gpu", "vcpu"} {
		_, err := fx.h.SetQuota(ctx, op, commands.SetQuota{Tenant: "acme", Resource: res, Max: 1 << 40})
		require.NoError(tb, err)
	}
	return fx
}

// requireStored checks what a command returned against what it stored,
// and the invariants.
func (fx *windowFixture) requireStored(t *testing.T, got core.Reservation, format string, args ...any) {
	t.Helper()
	ctx := context.Background()
	stored, err := fx.h.GetReservation(ctx, windowTenant, got.ID)
	require.NoError(t, err)
	require.Truef(t, stored.End.After(stored.Start), format+": stored window [%s, %s) is empty",
		append(args, stored.Start.Format(time.RFC3339Nano), stored.End.Format(time.RFC3339Nano))...)
	// PostgreSQL keeps microseconds; the command truncates to them before
	// it answers, so the returned window is exactly the stored one.
	require.Truef(t, stored.Start.Equal(got.Start) && stored.End.Equal(got.End),
		format+": returned window [%s, %s), stored [%s, %s)", append(args,
			got.Start.Format(time.RFC3339Nano), got.End.Format(time.RFC3339Nano),
			stored.Start.Format(time.RFC3339Nano), stored.End.Format(time.RFC3339Nano))...)
	v, err := invariants.Check(ctx, fx.pg.Q)
	require.NoError(t, err)
	require.Emptyf(t, v, format, args...)
}

// end releases (booked) or cancels (pending) a reservation, so the fleet
// does not fill up over a run.
func (fx *windowFixture) end(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	r, err := fx.h.GetReservation(ctx, windowTenant, id)
	require.NoError(t, err)
	if !slices.Contains([]core.State{core.ReservationPending, core.ReservationBooked}, r.State) {
		return
	}
	if r.State == core.ReservationPending {
		_, err = fx.h.CancelReservation(ctx, windowTenant, commands.CancelReservation{ReservationID: id})
	} else {
		_, err = fx.h.ReleaseReservation(ctx, windowTenant, commands.ReleaseReservation{ReservationID: id})
	}
	require.NoError(t, err, "end %s (%s)", id, r.State)
	v, err := invariants.Check(ctx, fx.pg.Q)
	require.NoError(t, err)
	require.Empty(t, v, "after ending %s", id)
}
