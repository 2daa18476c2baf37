package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/invariants"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

var operator = core.Actor{Tenant: "ops", Identity: "alice@ops", Role: core.RoleOperator}

// lostAfter is the provider pool's lostAfter in these tests.
const lostAfter = 10 * time.Minute

// fixture is a fresh database with a bare-metal pool "metal" and a provider
// pool "cloud" (lostAfter 10 min), and the gateways the test keeps alive.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	d        *pgtest.DB
	h        *commands.Handlers
	s        *commands.Handlers
	gateways map[string]lease.Lease // alive: renewed as time advances
}

func setup(t *testing.T) *fixture {
	t.Helper()
	d := pgtest.New(t)
	f := &fixture{t: t, ctx: context.Background(), d: d, h: commands.New(d.Pool, commands.Config{}),
		s: commands.New(d.Pool, commands.Config{}), gateways: map[string]lease.Lease{}}
	for _, tn := range []string{"ops", "acme"} {
		require.NoError(t, d.Q.TenantEnsure(f.ctx, tn))
	}
	_, err := f.h.CreateSite(f.ctx, operator, commands.CreateSite{ID: "fra1", Name: "Frankfurt 1"})
	require.NoError(t, err)
	_, err = f.h.CreatePool(f.ctx, operator, commands.CreatePool{ID: "metal", SiteID: "fra1", Kind: commands.PoolBareMetal})
	require.NoError(t, err)
	_, err = f.h.CreatePool(f.ctx, operator, commands.CreatePool{ID: "cloud", SiteID: "fra1", Kind: commands.PoolProvider,
		LostAfter: lostAfter})
	require.NoError(t, err)
	for _, r := range []string{"gpu", "vcpu", "memory", "disk"} {
		_, err := f.h.SetQuota(f.ctx, operator, commands.SetQuota{Tenant: "acme", Resource: r, Max: 1 << 30})
		require.NoError(t, err)
	}
	// The controller has been running: a first sweep sets its heartbeat.
	err = commandstest.SweepLiveness(f.ctx, f.s)
	require.NoError(t, err)
	return f
}

// join registers a node with two exclusive GPUs in pool and issues its
// credential.
func (f *fixture) join(id, pool string) commands.NodeCredential {
	f.t.Helper()
	var gpus []commands.GPUInventory
	for i := range 2 {
		gpus = append(gpus, commands.GPUInventory{UUID: fmt.Sprintf("GPU-%s-%d", id, i), Model: "h100", MemoryMB: 81920,
			Layout: core.GPULayout{Mode: core.GPUExclusive}})
	}
	_, err := f.h.RegisterNode(f.ctx, operator, commands.RegisterNode{ID: id, PoolID: pool, VCPU: 64,
		MemoryMB: 512 * 1024, DiskGB: 2000, GPUs: gpus})
	require.NoError(f.t, err)
	cred, err := f.s.JoinNode(f.ctx, operator, id)
	require.NoError(f.t, err)
	return cred
}

// gateway starts (or renews) gateway id's lease and keeps it alive.
func (f *fixture) gateway(id string) lease.Lease {
	f.t.Helper()
	l, err := lease.Acquire(f.ctx, f.d.Q, gateway.GatewayLeaseName(id), id+"-process", lease.GatewayTTL)
	require.NoError(f.t, err)
	f.gateways[id] = l
	return l
}

// killGateway stops renewing id's lease; it lapses GatewayTTL after the
// last renewal.
func (f *fixture) killGateway(id string) { delete(f.gateways, id) }

func (f *fixture) open(node, gw, journal string) commands.NodeSession {
	f.t.Helper()
	s, err := f.s.NodeSessions().OpenNodeSession(f.ctx, commands.OpenNodeSession{NodeID: node, Gateway: f.gateways[gw], GatewayID: gw, JournalID: journal})
	require.NoError(f.t, err)
	return s
}

// advance moves simulated time by d the way a healthy control plane lives
// through it: in steps of at most commands.LivenessSweepEvery, renewing the live
// gateways' leases and running the liveness sweep after each step.
func (f *fixture) advance(d time.Duration) {
	f.t.Helper()
	for d > 0 {
		step := min(d, commands.LivenessSweepEvery)
		f.d.AdvanceSimClock(f.t, step)
		d -= step
		for id := range f.gateways {
			f.gateway(id)
		}
		err := commandstest.SweepLiveness(f.ctx, f.s)
		require.NoError(f.t, err)
	}
}

func (f *fixture) node(id string) db.NodeGetRow {
	f.t.Helper()
	n, err := f.d.Q.NodeGet(f.ctx, id)
	require.NoError(f.t, err)
	return n
}

func (f *fixture) requireState(id string, want core.State) {
	f.t.Helper()
	require.Equal(f.t, string(want), f.node(id).State, "state of node %s at %s", id, f.d.Now(f.t))
}

func (f *fixture) session(id string) db.NodeSession {
	f.t.Helper()
	s, err := f.d.Q.NodeSessionGet(f.ctx, id)
	require.NoError(f.t, err)
	return s
}

func (f *fixture) conditions(id string) []commands.NodeCondition {
	f.t.Helper()
	var raw []byte
	require.NoError(f.t, f.d.Pool.QueryRow(f.ctx, "SELECT conditions FROM nodes WHERE id = $1", id).Scan(&raw))
	var out []commands.NodeCondition
	require.NoError(f.t, json.Unmarshal(raw, &out))
	return out
}

func (f *fixture) events(typ, node string) int {
	f.t.Helper()
	var n int
	require.NoError(f.t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM outbox WHERE type = $1 AND subject = $2",
		typ, core.NodeSubject(node)).Scan(&n))
	return n
}

func (f *fixture) requireInvariants() {
	f.t.Helper()
	v, err := invariants.Check(f.ctx, f.d.Q)
	require.NoError(f.t, err)
	require.Empty(f.t, v)
}

// activeReservation books one GPU of the metal pool for member, from now
// for an hour, and activates it (its window has begun), so that instances
// may run on it.
func (f *fixture) activeReservation(t *testing.T) core.Reservation {
	t.Helper()
	now := f.d.Now(t)
	res, err := f.h.CreateReservation(f.ctx, member, commands.CreateReservation{PoolID: "metal", GPUs: 1,
		Start: now, End: now.Add(time.Hour)})
	require.NoError(t, err)
	require.NoError(t, commandstest.Activate(f.ctx, f.h, res.Reservation.ID))
	return res.Reservation
}
