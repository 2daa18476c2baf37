package queries_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pgtest"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/queries"
)

var (
	operator = core.Actor{Tenant: "ops", Identity: "alice@ops", Role: core.RoleOperator}
	tenantA  = core.Actor{Tenant: "acme", Identity: "bob@acme", Role: core.RoleMember}
	tenantB  = core.Actor{Tenant: "globex", Identity: "carol@globex", Role: core.RoleMember}
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
	f := &fixture{d: d, h: &commands.Handlers{Pool: d.Pool}, q: queries.New(d.Pool), ctx: context.Background()}
	for _, tn := range []string{"ops", "acme", "globex"} {
		require.NoError(t, d.Q.TenantEnsure(f.ctx, tn))
	}
	_, err := f.h.CreateSite(f.ctx, operator, commands.CreateSite{ID: "fra1", Name: "Frankfurt 1"})
	require.NoError(t, err)
	_, err = f.h.CreatePool(f.ctx, operator, commands.CreatePool{ID: "fra1-gpu", SiteID: "fra1", Kind: commands.PoolBareMetal})
	require.NoError(t, err)
	for _, tn := range []string{"acme", "globex"} {
		for res, max := range map[string]int64{"gpu": 1000, "vcpu": 100000, "memory": 10000000, "disk": 1000000} {
			_, err := f.h.SetQuota(f.ctx, operator, commands.SetQuota{Tenant: tn, Resource: res, Max: max})
			require.NoError(t, err)
		}
	}
	for _, p := range projections.All() {
		f.disps = append(f.disps, outbox.NewTxDispatcher(d.Pool, "test", p, nil))
	}
	return f
}

func (f *fixture) node(t *testing.T, id string, gpus int) {
	t.Helper()
	var inv []commands.GPUInventory
	for i := range gpus {
		inv = append(inv, commands.GPUInventory{UUID: fmt.Sprintf("GPU-%s-%d", id, i), Model: "a100", MemoryMB: 81920,
			Layout: core.GPULayout{Mode: core.GPUExclusive}})
	}
	_, err := f.h.RegisterNode(f.ctx, operator, commands.RegisterNode{ID: id, PoolID: "fra1-gpu",
		VCPU: 64, MemoryMB: 512 * 1024, DiskGB: 2000, GPUs: inv})
	require.NoError(t, err)
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
