package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// The demo fleet and its in-process daemons agree: a daemon with the
// node's FakeGPUs spec reports exactly the GPUs the demo registered for it
// (same UUIDs, models and memory), so the inventory reconcile finds nothing
// to change; and the demo's joiner joins each node without a token.
func TestDemoAndFakeAgentAgree(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	h := commands.New(d.Pool, commands.Config{})
	at := demoEndpoints{Addr: ":8080", GatewayAddr: ":8081", Dir: t.TempDir()}
	var out bytes.Buffer
	fleet, err := seedDemo(ctx, h, &commands.Tokens{Pool: d.Pool}, at, d.Now(t), &out, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"demo-node-1": true, "demo-node-2": true, "demo-node-3": true}, fleet.Registered)
	require.Contains(t, out.String(), "The nodes' daemons run in this process")
	require.NotContains(t, out.String(), "compute agent", "the demo's daemons need no terminal of their own")

	nodes, err := demoNodes()
	require.NoError(t, err)
	require.Len(t, nodes, 3)
	require.Equal(t, nodes, fleet.Nodes)
	want := map[string]string{"demo-node-1": "8xH100-80GB", "demo-node-2": "4xA100-80GB", "demo-node-3": "4xL4-24GB"}
	gw, err := lease.Acquire(ctx, d.Q, "gateway:gw1", "gw1-process", lease.GatewayTTL)
	require.NoError(t, err)
	for _, n := range nodes {
		id := n.Register.ID
		require.Equal(t, want[id], n.FakeGPUs, id)

		// What the demo registered is what the fake agent reports.
		fake, err := agent.FakeGPUs(id, n.FakeGPUs)
		require.NoError(t, err)
		devices, err := d.Q.DeviceListByNode(ctx, id)
		require.NoError(t, err)
		var registered []agent.GPU
		for _, dev := range devices {
			if dev.Kind == "gpu" {
				registered = append(registered, agent.GPU{UUID: dev.ID, Model: dev.Model, MemoryMB: dev.MemoryMb})
			}
		}
		require.ElementsMatch(t, fake, registered, id)
		require.Equal(t, "GPU-"+id+"-0", fake[0].UUID)

		// The in-process daemon joins without a token.
		cred, err := demoJoiner{h: h}.Join(ctx, id, agent.Inventory{})
		require.NoError(t, err)
		require.NotEmpty(t, cred)

		// Connected, the fake agent's inventory changes nothing.
		s, err := h.NodeSessions().OpenNodeSession(ctx, commands.OpenNodeSession{NodeID: id, Gateway: gw, GatewayID: "gw1", JournalID: "j1"})
		require.NoError(t, err)
		reported := make([]commands.ReportedGPU, len(fake))
		for i, g := range fake {
			reported[i] = commands.ReportedGPU{UUID: g.UUID, Model: g.Model, MemoryMB: g.MemoryMB}
		}
		res, err := h.NodeSessions().ReconcileNodeInventory(ctx, id, s.Epoch, commands.NodeInventory{GPUs: reported})
		require.NoError(t, err)
		require.False(t, res.Changed, "%s: %+v", id, res)
		require.Empty(t, res.Mismatched, id)
		require.Empty(t, res.Conditions, id)
	}

	// Seeding again on the same database issues new tokens, registers
	// nothing anew and changes nothing else.
	fleet, err = seedDemo(ctx, h, &commands.Tokens{Pool: d.Pool}, at, d.Now(t).Add(time.Minute), &out,
		slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"demo-node-1": false, "demo-node-2": false, "demo-node-3": false}, fleet.Registered)
}

// The demo's banner starts the instance the README's quick start starts,
// `sleep 600`: an instance's output is not kept, so a command there whose
// point is its output (`env | grep VISIBLE`) shows nothing; README.md's
// "Using it" reads what a workload sees through exec instead.
func TestDemoBannerStartsTheQuickStartsInstance(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	h := commands.New(d.Pool, commands.Config{})
	at := demoEndpoints{Addr: ":8080", GatewayAddr: ":8081", Dir: t.TempDir()}
	var out bytes.Buffer
	_, err := seedDemo(context.Background(), h, &commands.Tokens{Pool: d.Pool}, at, d.Now(t), &out, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	_, terminal2 := quickStart(t, string(readme))
	instanceLines := func(lines []string) []string {
		var found []string
		for _, l := range lines {
			if i := strings.Index(l, " #"); i >= 0 {
				l = l[:i]
			}
			if l = strings.TrimSpace(l); strings.Contains(l, " instances create ") {
				found = append(found, l)
			}
		}
		return found
	}
	want := instanceLines(terminal2)
	require.Len(t, want, 1, "the quick start starts one instance")
	require.Equal(t, want, instanceLines(strings.Split(out.String(), "\n")))
}

// The demo's daemons: one per node, with its fake GPUs and resources, this
// server's gateway, and a state directory of its own in the demo directory,
// cleared when the node was registered afresh (a credential there is for a
// database that is gone) and kept when the node existed. Their workloads
// are isolated as the agent's default (containers) only where that can
// work, and the workload directories are the demo's.
func TestDemoDaemonConfigs(t *testing.T) {
	t.Parallel()
	nodes, err := demoNodes()
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "demo")
	at := demoEndpoints{Addr: "127.0.0.1:18080", GatewayAddr: ":18081", Dir: dir}
	for _, n := range nodes[:2] {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "agent-"+n.Register.ID), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "agent-"+n.Register.ID, "credential"), []byte("old"), 0o600))
	}
	fleet := demoFleet{Nodes: nodes, Registered: map[string]bool{"demo-node-1": true, "demo-node-2": false, "demo-node-3": true}}
	cfgs, err := demoAgentConfigs(nil, fleet, at, agent.IsolationNone, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Len(t, cfgs, 3)
	for i, c := range cfgs {
		n := nodes[i]
		require.Equal(t, n.Register.ID, c.NodeID)
		require.Equal(t, demoPool, c.PoolID)
		require.Equal(t, n.FakeGPUs, c.FakeGPUs)
		require.Equal(t, []int64{n.Register.VCPU, n.Register.MemoryMB, n.Register.DiskGB}, []int64{c.VCPU, c.MemoryMB, c.DiskGB})
		require.Equal(t, []string{"ws://localhost:18081"}, c.GatewayURLs)
		require.Equal(t, "http://127.0.0.1:18080", c.ServerURL)
		require.Equal(t, filepath.Join(dir, "agent-"+c.NodeID), c.StateDir)
		require.DirExists(t, c.StateDir)
		require.Equal(t, filepath.Join(dir, "workloads", c.NodeID), c.WorkloadDir)
		require.Equal(t, agent.IsolationNone, c.WorkloadIsolation)
		require.IsType(t, demoJoiner{}, c.Joiner)
	}
	require.NoFileExists(t, filepath.Join(dir, "agent-demo-node-1", "credential"), "registered afresh: state cleared")
	require.FileExists(t, filepath.Join(dir, "agent-demo-node-2", "credential"), "existing node: state kept")

	// Containers where root and runc are there, else none.
	_, runcErr := exec.LookPath("runc")
	if os.Geteuid() == 0 && runcErr == nil {
		require.Equal(t, "", demoIsolation())
	} else {
		require.Equal(t, agent.IsolationNone, demoIsolation())
	}
}

// Seeding the demo again on a database where acme uses more than the
// demo's quota (an operator raised it, acme booked more) keeps that quota
// instead of failing the start: a quota cannot go below its use.
func TestDemoSeedsAgainOverAQuotaInUse(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	h := commands.New(d.Pool, commands.Config{})
	at := demoEndpoints{Addr: ":8080", GatewayAddr: ":8081", Dir: t.TempDir()}
	seed := func() error {
		_, err := seedDemo(ctx, h, &commands.Tokens{Pool: d.Pool}, at, d.Now(t), io.Discard, slog.New(slog.DiscardHandler))
		return err
	}
	require.NoError(t, seed())
	_, err := h.SetQuota(ctx, bootstrapActor, commands.SetQuota{Tenant: "acme", Resource: core.ResourceGPU, Max: 40})
	require.NoError(t, err)
	acme := core.Actor{Tenant: "acme", Identity: "demo-user", Role: core.RoleMember}
	start := d.Now(t).Add(time.Hour)
	for _, r := range []commands.CreateReservation{
		{GPUs: 8, GPUModel: "H100-80GB"}, {GPUs: 8, SlotKind: core.GPUTimeSlice}, {GPUs: 2, MIGProfile: "1g.10gb"},
	} {
		r.PoolID, r.Start, r.End = demoPool, start, start.Add(time.Hour)
		res, err := h.CreateReservation(ctx, acme, r)
		require.NoError(t, err)
		require.Equal(t, core.ReservationBooked, res.Reservation.State)
	}

	require.NoError(t, seed())
	_, err = h.CreateReservation(ctx, acme, commands.CreateReservation{PoolID: demoPool, GPUs: 1, MIGProfile: "1g.10gb",
		Start: start, End: start.Add(time.Hour)})
	require.NoError(t, err, "the raised quota was kept")
}

// A second `serve --demo` on the same database says it found the fleet and
// kept it, instead of announcing it seeded it again, and says its tokens
// are new ones beside the first run's (a secret is shown only at issue);
// the first run says neither.
func TestDemoSaysWhenTheFleetWasAlreadyThere(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	h := commands.New(d.Pool, commands.Config{})
	at := demoEndpoints{Addr: ":8080", GatewayAddr: ":8081", Dir: t.TempDir()}
	seed := func() string {
		var out bytes.Buffer
		_, err := seedDemo(context.Background(), h, &commands.Tokens{Pool: d.Pool}, at, d.Now(t), &out, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		return out.String()
	}
	first := seed()
	require.Contains(t, first, "Demo fleet seeded: site demo-site, pool demo-pool, 3 nodes")
	require.NotContains(t, first, "already present")
	require.NotContains(t, first, "tokens are new")

	second := seed()
	require.Contains(t, second, "Demo fleet already present: site demo-site, pool demo-pool, 3 nodes")
	require.Contains(t, second, "kept as it is")
	require.NotContains(t, second, "seeded")
	require.Contains(t, second, "These tokens are new")
	require.Contains(t, second, "Those of earlier runs stay valid until revoked")

	var tokens int
	require.NoError(t, d.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM api_tokens WHERE identity IN ('demo-operator', 'demo-user')").Scan(&tokens))
	require.Equal(t, 4, tokens, "each run issued two tokens; the first run's were kept")
}

// The headline tells a fleet seeded now, one found whole, and one of which
// this run added only the missing parts.
func TestDemoHeadline(t *testing.T) {
	t.Parallel()
	nodes, err := demoNodes()
	require.NoError(t, err)
	all := map[string]bool{"demo-node-1": true, "demo-node-2": true, "demo-node-3": true}
	fresh := demoFleet{Nodes: nodes, Registered: all}
	fresh.Created.Site, fresh.Created.Pool = true, true
	require.True(t, strings.HasPrefix(fresh.headline(), "Demo fleet seeded: "))
	require.False(t, fresh.existed())

	kept := demoFleet{Nodes: nodes, Registered: map[string]bool{}}
	require.True(t, strings.HasPrefix(kept.headline(), "Demo fleet already present: "))
	require.True(t, kept.existed())

	partial := demoFleet{Nodes: nodes, Registered: map[string]bool{"demo-node-3": true}}
	require.True(t, strings.HasPrefix(partial.headline(), "Demo fleet completed: "))
	require.Contains(t, partial.headline(), "4 of its 5 parts existed")
	require.True(t, partial.existed())
}
