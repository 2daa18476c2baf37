package commands_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/invariants"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// TestMain (pgtest.Main) lives in main_test.go: one per test binary.

var (
	operator = commandstest.Operator
	tenantA  = commandstest.TenantA
	tenantB  = commandstest.TenantB
)

// fixture is a fresh database with one site and one bare-metal pool, and
// generous quotas for tenants acme and globex.
type fixture struct {
	d   *pgtest.DB
	h   *commands.Handlers
	ctx context.Context

	// daemons is what each node's stand-in daemon holds (see
	// daemon.report), which it reports at its next connect.
	mu      sync.Mutex
	daemons map[string]*daemonMemory
}

func setup(t *testing.T) *fixture {
	t.Helper()
	d := pgtest.New(t)
	f := &fixture{d: d, h: commands.New(d.Pool, commands.Config{}), ctx: context.Background()}
	commandstest.Seed(t, d, f.h, 2)
	return f
}

func (f *fixture) quota(t *testing.T, tenant, resource string, max int64) {
	t.Helper()
	_, err := f.h.SetQuota(f.ctx, operator, commands.SetQuota{Tenant: tenant, Resource: resource, Max: max})
	require.NoError(t, err)
}

// node registers a node with the given GPU layouts (one GPU per layout,
// model a100, 80 GB) and 64 vCPU, 512 GB memory, 2 TB disk.
func (f *fixture) node(t *testing.T, id string, layouts ...core.GPULayout) []string {
	t.Helper()
	return commandstest.Node(t, f.h, id, layouts...)
}

var exclusive = core.GPULayout{Mode: core.GPUExclusive}

// window is [SimEpoch + from hours, SimEpoch + to hours).
func window(from, to int) (time.Time, time.Time) {
	return pgtest.SimEpoch.Add(time.Duration(from) * time.Hour), pgtest.SimEpoch.Add(time.Duration(to) * time.Hour)
}

func (f *fixture) reserve(t *testing.T, actor core.Actor, cmd commands.CreateReservation) commands.ReservationResult {
	t.Helper()
	if cmd.PoolID == "" && cmd.SiteID == "" {
		cmd.PoolID = "fra1-gpu"
	}
	if cmd.Start.IsZero() {
		cmd.Start, cmd.End = window(0, 2)
	}
	res, err := f.h.CreateReservation(f.ctx, actor, cmd)
	require.NoError(t, err)
	return res
}

// requireInvariants fails the test on any invariant violation.
func (f *fixture) requireInvariants(t *testing.T) {
	t.Helper()
	v, err := invariants.Check(f.ctx, f.d.Q)
	require.NoError(t, err)
	require.Empty(t, v)
}

func (f *fixture) countEvents(t *testing.T, typ string) int {
	t.Helper()
	var n int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM outbox WHERE type = $1", typ).Scan(&n))
	return n
}

// activate makes a booked reservation active the way time does: the
// simulated clock moves to its start if that is still ahead, and the
// reservation.activate reconciler runs. Instances and node jobs run only
// on an active reservation.
func (f *fixture) activate(t *testing.T, r core.Reservation) {
	t.Helper()
	if now := f.d.Now(t); r.Start.After(now) {
		f.d.AdvanceSimClock(t, r.Start.Sub(now))
	}
	require.NoError(t, commandstest.Activate(f.ctx, f.h, r.ID))
	var state string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT state FROM reservations WHERE id = $1", r.ID).Scan(&state))
	require.Equal(t, string(core.ReservationActive), state)
}
