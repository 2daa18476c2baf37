package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// The demo fleet and a fake agent agree: `compute agent --node <n>
// --fake-gpus <spec>`, with the spec the demo prints for n, reports exactly
// the GPUs the demo registered for n (same UUIDs, models and memory), so
// the inventory reconcile finds nothing to change; and the printed line
// joins with the token file the demo wrote.
func TestDemoAndFakeAgentAgree(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	h := &commands.Handlers{Pool: d.Pool}
	dir := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, seedDemo(ctx, h, &commands.Tokens{Pool: d.Pool},
		demoEndpoints{Addr: ":8080", GatewayAddr: ":8081", TokenDir: dir}, d.Now(t), &out, slog.New(slog.DiscardHandler)))

	nodes, err := demoNodes()
	require.NoError(t, err)
	require.Len(t, nodes, 3)
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

		// The printed line names the spec and the token file, which joins.
		path := filepath.Join(dir, "join-token-"+id)
		require.Contains(t, out.String(), fmt.Sprintf("./bin/compute agent --node %s --pool demo-pool --fake-gpus %s --join-token-file %s",
			id, n.FakeGPUs, path))
		token, err := os.ReadFile(path)
		require.NoError(t, err)
		_, err = h.JoinNodeWithToken(ctx, strings.TrimSpace(string(token)), id)
		require.NoError(t, err)

		// Connected, the fake agent's inventory changes nothing.
		s, err := h.OpenNodeSession(ctx, commands.OpenNodeSession{NodeID: id, Gateway: gw, GatewayID: "gw1", JournalID: "j1"})
		require.NoError(t, err)
		reported := make([]commands.ReportedGPU, len(fake))
		for i, g := range fake {
			reported[i] = commands.ReportedGPU{UUID: g.UUID, Model: g.Model, MemoryMB: g.MemoryMB}
		}
		res, err := h.ReconcileNodeInventory(ctx, id, s.Epoch, reported)
		require.NoError(t, err)
		require.False(t, res.Changed, "%s: %+v", id, res)
		require.Empty(t, res.Mismatched, id)
		require.Empty(t, res.Conditions, id)
	}
	require.Contains(t, out.String(), "--server http://localhost:8080 --gateway ws://localhost:8081")

	// Seeding again on the same database issues new tokens and changes
	// nothing else.
	require.NoError(t, seedDemo(ctx, h, &commands.Tokens{Pool: d.Pool},
		demoEndpoints{Addr: ":8080", GatewayAddr: ":8081", TokenDir: dir}, d.Now(t).Add(time.Minute), &out,
		slog.New(slog.DiscardHandler)))
}
