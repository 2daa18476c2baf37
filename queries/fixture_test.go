package queries_test

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
	"github.com/bettercompute/compute/queries"
)

var (
	operator = commandstest.Operator
	tenantA  = commandstest.TenantA
	tenantB  = commandstest.TenantB
)

const waitFor = 20 * time.Second

type fixture struct {
	d     *pgtest.DB
	h     *commands.Handlers
	q     *queries.Service
	ctx   context.Context
	disps []*outbox.Dispatcher
}

// setup is a fresh database with a site, a pool, quotas for acme and
// globex, a query service and a dispatcher per projection (stepped by the
// test, never run in the background unless the test says so).
func setup(t *testing.T) *fixture {
	t.Helper()
	d := pgtest.New(t)
	f := &fixture{d: d, h: commands.New(d.Pool, commands.Config{}), q: queries.New(d.Pool), ctx: context.Background()}
	commandstest.Seed(t, d, f.h, 0)
	for _, p := range projections.All() {
		f.disps = append(f.disps, outbox.NewTxDispatcher(d.Pool, "test", p, nil))
	}
	return f
}

// node registers a node with gpus exclusive a100s.
func (f *fixture) node(t *testing.T, id string, gpus int) {
	t.Helper()
	layouts := make([]core.GPULayout, gpus)
	for i := range layouts {
		layouts[i] = core.GPULayout{Mode: core.GPUExclusive}
	}
	commandstest.Node(t, f.h, id, layouts...)
}

func at(h float64) time.Time { return pgtest.SimEpoch.Add(time.Duration(h * float64(time.Hour))) }

func (f *fixture) reserve(t *testing.T, actor core.Actor, from, to float64) commands.ReservationResult {
	t.Helper()
	res, err := f.h.CreateReservation(f.ctx, actor, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1,
		Start: at(from), End: at(to)})
	require.NoError(t, err)
	return res
}

// catchUp steps every dispatcher until each has passed p (events become
// visible only below the cluster-wide snapshot xmin, hence the polling).
func (f *fixture) catchUp(t *testing.T, p outbox.Position) {
	t.Helper()
	require.Eventually(t, func() bool {
		done := true
		for _, d := range f.disps {
			_, err := d.RunOnce(f.ctx)
			require.NoError(t, err)
			cur, err := outbox.CursorOf(f.ctx, f.d.Q, d.SinkID())
			require.NoError(t, err)
			done = done && !cur.Less(p)
		}
		return done
	}, waitFor, 2*time.Millisecond)
}
