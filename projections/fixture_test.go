package projections_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

var (
	operator = commandstest.Operator
	tenantA  = commandstest.TenantA
	tenantB  = commandstest.TenantB

	exclusive = core.GPULayout{Mode: core.GPUExclusive}
	mig       = core.GPULayout{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "3g.40gb"}}
	slots     = core.GPULayout{Mode: core.GPUTimeSlice, Slots: 4}
)

// waitFor bounds every wait on the outbox frontier: other tests on the same
// server can hold it back briefly.
const waitFor = 20 * time.Second

// fixture is a fresh database with one site, one pool (vCPU ratio 2), the
// capacity commands and a dispatcher per projection.
type fixture struct {
	d     *pgtest.DB
	h     *commands.Handlers
	ctx   context.Context
	disps []*outbox.Dispatcher
}

func setup(t *testing.T) *fixture {
	t.Helper()
	d := pgtest.New(t)
	f := &fixture{d: d, h: commands.New(d.Pool, commands.Config{}), ctx: context.Background()}
	commandstest.Seed(t, d, f.h, 2)
	// As the dispatcher role runs them: one group, each projection under
	// its own lease and cursor.
	var sinks []outbox.TxSink
	for _, p := range projections.All() {
		sinks = append(sinks, p)
	}
	f.disps = []*outbox.Dispatcher{outbox.NewTxGroup(d.Pool, "test", sinks, nil)}
	return f
}

// node registers a node with one a100 GPU per layout.
func (f *fixture) node(t *testing.T, id string, layouts ...core.GPULayout) []string {
	t.Helper()
	return commandstest.Node(t, f.h, id, layouts...)
}

// at is SimEpoch + h hours.
func at(h float64) time.Time { return pgtest.SimEpoch.Add(time.Duration(h * float64(time.Hour))) }

func (f *fixture) reserve(t *testing.T, actor core.Actor, cmd commands.CreateReservation) commands.ReservationResult {
	t.Helper()
	if cmd.PoolID == "" && cmd.SiteID == "" {
		cmd.PoolID = "fra1-gpu"
	}
	if cmd.Start.IsZero() {
		cmd.Start, cmd.End = at(0), at(2)
	}
	res, err := f.h.CreateReservation(f.ctx, actor, cmd)
	require.NoError(t, err)
	return res
}

// lastPosition is the position of the newest event in the log.
func (f *fixture) lastPosition(t *testing.T) outbox.Position {
	t.Helper()
	var p outbox.Position
	require.NoError(t, f.d.Pool.QueryRow(f.ctx,
		"SELECT txid, seq FROM outbox ORDER BY txid DESC, seq DESC LIMIT 1").Scan(&p.TxID, &p.Seq))
	return p
}

// catchUp steps every projection's dispatcher until each has applied the
// whole log. Events become visible only below the cluster-wide snapshot
// xmin, so it polls with a deadline rather than assuming they are.
func (f *fixture) catchUp(t *testing.T) {
	t.Helper()
	last := f.lastPosition(t)
	require.Eventually(t, func() bool {
		done := true
		for _, d := range f.disps {
			_, err := d.RunOnce(f.ctx)
			require.NoError(t, err)
			for _, id := range d.SinkIDs() {
				cur, err := outbox.CursorOf(f.ctx, f.d.Q, id)
				require.NoError(t, err)
				done = done && !cur.Less(last)
			}
		}
		return done
	}, waitFor, 2*time.Millisecond)
}

// scenario drives every kind of capacity command: a mixed fleet, a
// priority class and a tenant's allow-list, bookings (one of that class),
// a pending reservation placed late, extension, release, cancellation,
// activation and expiry on the simulated clock, cordon, taints,
// quarantine, health and a mode change. It returns the reservations made.
func (f *fixture) scenario(t *testing.T) map[string]commands.ReservationResult {
	t.Helper()
	out := map[string]commands.ReservationResult{}
	f.node(t, "n1", exclusive, exclusive)
	gpus2 := f.node(t, "n2", mig, slots)
	_, err := f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "batch", Value: -10, Preemptible: true})
	require.NoError(t, err)
	_, err = f.h.SetTenantPriorityClasses(f.ctx, operator, commands.SetTenantPriorityClasses{Tenant: tenantB.Tenant,
		Classes: []string{"batch"}})
	require.NoError(t, err)

	out["a"] = f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 8, MemoryMB: 1024, DiskGB: 10})
	out["b"] = f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, MIGProfile: "3g.40gb", VCPU: 4, Start: at(1), End: at(5),
		PriorityClass: "batch"})
	out["c"] = f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, SlotKind: core.GPUTimeSlice, SiteID: "fra1", Start: at(0.5), End: at(3)})
	out["big"] = f.reserve(t, tenantB, commands.CreateReservation{GPUs: 3}) // no node has 3 free GPUs: pending
	require.Equal(t, core.ReservationPending, out["big"].Reservation.State)
	out["p2"] = f.reserve(t, tenantB, commands.CreateReservation{GPUs: 2, Start: at(0), End: at(8)}) // pending until a ends
	require.Equal(t, core.ReservationPending, out["p2"].Reservation.State)
	out["cancelled"] = f.reserve(t, tenantA, commands.CreateReservation{GPUs: 4})
	_, err = f.h.CancelReservation(f.ctx, tenantA, commands.CancelReservation{ReservationID: out["cancelled"].Reservation.ID})
	require.NoError(t, err)

	f.node(t, "n3", exclusive) // after p2, so that p2 cannot go there

	_, err = f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: out["a"].Reservation.ID, NewEnd: at(4)})
	require.NoError(t, err)
	out["later"] = f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: at(10), End: at(12)})

	_, err = f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n3"})
	require.NoError(t, err)
	_, err = f.h.TaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "maintenance"})
	require.NoError(t, err)
	_, err = f.h.UntaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "maintenance"})
	require.NoError(t, err)
	_, err = f.h.TaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n2", Taint: "gpu-burn-in"})
	require.NoError(t, err)
	_, err = f.h.QuarantineDevice(f.ctx, operator, commands.QuarantineDevice{DeviceID: "GPU-n3-0"})
	require.NoError(t, err)
	_, err = f.h.SetDeviceHealth(f.ctx, operator, commands.SetDeviceHealth{DeviceID: "GPU-n1-1", Healthy: false})
	require.NoError(t, err)
	_, err = f.h.SetDeviceHealth(f.ctx, operator, commands.SetDeviceHealth{DeviceID: "GPU-n1-1", Healthy: true})
	require.NoError(t, err)

	// 30 minutes in: a is active; release the slots, which began at 0.5 h
	// (cut at 0.75 h) and the later booking, which had not begun (withdrawn).
	f.d.AdvanceSimClock(t, 45*time.Minute)
	require.NoError(t, commandstest.Activate(f.ctx, f.h, out["a"].Reservation.ID))
	require.NoError(t, commandstest.Activate(f.ctx, f.h, out["c"].Reservation.ID))
	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: out["c"].Reservation.ID})
	require.NoError(t, err)
	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: out["later"].Reservation.ID})
	require.NoError(t, err)
	// The slot GPU is empty now: give it another layout.
	_, err = f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: gpus2[1], Layout: core.GPULayout{Mode: core.GPUMPS, Slots: 2}})
	require.NoError(t, err)

	// Free n1 and n2 enough for the pending one? It needs 3 GPUs on one
	// node; none has. Untaint n3 and uncordon: still 1 GPU. It stays pending
	// with a fresh condition; the expiry at 2 h then ends it.
	_, err = f.h.UncordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n3"})
	require.NoError(t, err)

	f.d.AdvanceSimClock(t, 5*time.Hour) // 5.75 h: a (to 4 h) and b (to 5 h) and big (to 2 h) are over
	for _, k := range []string{"a", "b", "big"} {
		require.NoError(t, commandstest.Expire(f.ctx, f.h, out[k].Reservation.ID))
	}
	require.NoError(t, f.h.RetryPending(f.ctx, out["p2"].Reservation.ID), "a freed n1: p2 is booked from now")
	out["late"] = f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, Start: at(7), End: at(9)})
	return out
}

// checkAgainstWriteModel runs the comparison of `compute check`, by table.
func (f *fixture) checkAgainstWriteModel(t *testing.T) map[string]projections.ReadModelCheck {
	t.Helper()
	checks, err := projections.CheckAgainstWriteModel(f.ctx, f.d.Pool, 100)
	require.NoError(t, err)
	out := map[string]projections.ReadModelCheck{}
	for _, c := range checks {
		out[c.Table] = c
	}
	require.Len(t, out, 5, "every read model that mirrors write tables is compared")
	return out
}

// requireAgrees asserts that a read model agrees with the write model and
// that its projection has nothing left to apply to it.
func requireAgrees(t *testing.T, checks map[string]projections.ReadModelCheck, table string) {
	t.Helper()
	c, ok := checks[table]
	require.True(t, ok, "%s is compared", table)
	require.Empty(t, c.Rows, table)
	require.Zero(t, c.Diverging, table)
	require.Zero(t, c.Behind, table)
}
