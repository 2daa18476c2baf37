package queries_test

import (
	"cmp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/queries"
)

// lastPosition is the position of the newest event in the log.
func (f *fixture) lastPosition(t *testing.T) outbox.Position {
	t.Helper()
	var p outbox.Position
	require.NoError(t, f.d.Pool.QueryRow(f.ctx,
		"SELECT txid, seq FROM outbox ORDER BY txid DESC, seq DESC LIMIT 1").Scan(&p.TxID, &p.Seq))
	return p
}

// advance moves simulated time by d in liveness-sweep steps, as a running
// control plane lives through it (the gateway's flushes are left out, so
// no heartbeat comes in).
func (f *fixture) advance(t *testing.T, d time.Duration) {
	t.Helper()
	err := commandstest.SweepLiveness(f.ctx, f.h)
	require.NoError(t, err)
	for d > 0 {
		step := min(d, commands.LivenessSweepEvery)
		f.d.AdvanceSimClock(t, step)
		d -= step
		err := commandstest.SweepLiveness(f.ctx, f.h)
		require.NoError(t, err)
	}
}

// desiredGeneration is the node's desired-spec generation in the write
// model (no node_desired row is generation 0).
func (f *fixture) desiredGeneration(t *testing.T, id string) int64 {
	t.Helper()
	var g int64
	require.NoError(t, f.d.Pool.QueryRow(f.ctx,
		"SELECT coalesce((SELECT generation FROM node_desired WHERE node_id = $1), 0)", id).Scan(&g))
	return g
}

func (f *fixture) readNode(t *testing.T, id string) queries.Node {
	t.Helper()
	f.catchUp(t, f.lastPosition(t))
	n, err := f.q.GetNode(f.ctx, operator, id, outbox.Position{})
	require.NoError(t, err)
	page, _, err := f.q.ListNodes(f.ctx, operator, queries.ListNodes{})
	require.NoError(t, err)
	for _, x := range page {
		if x.ID == id {
			x.Devices = n.Devices
			require.Equal(t, n, x, "GET /v1/nodes and GET /v1/nodes/{id} agree")
		}
	}
	return n
}

// A node's liveness as operators read it: its state, the age of its last
// heartbeat (at read time, on the database clock), no-schedule reasons,
// conditions, generations and live allocations.
func TestNodeLivenessIsVisible(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 2)
	f.node(t, "n2", 0) // no GPUs: the reservation goes to n1

	n := f.readNode(t, "n1")
	require.Equal(t, string(core.NodeRegistered), n.Liveness)
	require.Nil(t, n.LastHeartbeatAt)
	require.Nil(t, n.SecondsSinceHeartbeat)
	require.Empty(t, n.NoScheduleReasons)
	require.Empty(t, n.Conditions)
	require.Equal(t, f.desiredGeneration(t, "n1"), n.Generation)
	require.Zero(t, n.ObservedGeneration)

	_, err := f.h.JoinNode(f.ctx, operator, "n1")
	require.NoError(t, err)
	gw, err := lease.Acquire(f.ctx, f.d.Q, "gateway:gw1", "gw1-process", lease.GatewayTTL)
	require.NoError(t, err)
	f.reserve(t, tenantA, 0, 2)
	generation := f.desiredGeneration(t, "n1")
	// The daemon says, in its hello, that it has applied it.
	s, err := f.h.NodeSessions().OpenNodeSession(f.ctx, commands.OpenNodeSession{NodeID: "n1", Gateway: gw, GatewayID: "gw1",
		JournalID: "j1", ObservedGeneration: generation})
	require.NoError(t, err)
	opened := f.d.Now(t)
	f.advance(t, 7*time.Second)

	n = f.readNode(t, "n1")
	require.Equal(t, string(core.NodeConnected), n.Liveness)
	require.NotNil(t, n.LastHeartbeatAt)
	require.True(t, opened.Equal(*n.LastHeartbeatAt), "%s, want %s", n.LastHeartbeatAt, opened)
	require.InDelta(t, 7.0, *n.SecondsSinceHeartbeat, 0.001, "computed at read time from compute_now()")
	require.Equal(t, generation, n.Generation)
	require.Equal(t, generation, n.ObservedGeneration)
	require.Equal(t, int64(1), n.Allocations)

	// The daemon reports one GPU fewer: the other is missing.
	_, err = f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{GPUs: []commands.ReportedGPU{
		{UUID: "GPU-n1-1", Model: "a100", MemoryMB: 81920}}})
	require.NoError(t, err)
	n = f.readNode(t, "n1")
	require.Len(t, n.Conditions, 1)
	require.Equal(t, core.ConditionGPUMissing, n.Conditions[0].Type)
	require.Equal(t, commands.HealthMissing, n.Devices[0].Health)

	// Its daemon cannot isolate workloads: the read node shows why, until a
	// report without a reason.
	one := []commands.ReportedGPU{{UUID: "GPU-n1-1", Model: "a100", MemoryMB: 81920}}
	_, err = f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{GPUs: one,
		WorkloadsRefused: "workloads are refused on this node: runc not found"})
	require.NoError(t, err)
	n = f.readNode(t, "n1")
	require.Len(t, n.Conditions, 2)
	require.Equal(t, core.ConditionWorkloadsRefused, n.Conditions[1].Type)
	require.Equal(t, "workloads are refused on this node: runc not found", n.Conditions[1].Message)
	_, err = f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{GPUs: one})
	require.NoError(t, err)
	n = f.readNode(t, "n1")
	require.Len(t, n.Conditions, 1)
	require.Equal(t, core.ConditionGPUMissing, n.Conditions[0].Type)

	// Drained, then the session closes and the node goes unreachable.
	_, err = f.h.DrainNode(f.ctx, operator, commands.DrainNode{NodeID: "n1"})
	require.NoError(t, err)
	require.NoError(t, f.h.NodeSessions().CloseNodeSession(f.ctx, "n1", s.Epoch, 0))
	f.advance(t, commands.NoSessionAfter)
	n = f.readNode(t, "n1")
	require.Equal(t, string(core.NodeUnreachable), n.Liveness)
	require.Equal(t, []string{core.NoScheduleDraining, core.NoScheduleUnreachable}, n.NoScheduleReasons)
	require.Equal(t, []string{core.ConditionGPUMissing, core.ConditionNodeUnreachable},
		[]string{n.Conditions[0].Type, n.Conditions[1].Type})
	require.InDelta(t, 7.0+commands.NoSessionAfter.Seconds(), *n.SecondsSinceHeartbeat, 0.001)
	require.Equal(t, int64(1), n.Allocations, "nothing is released")

	// n2 never joined: unreachable counted from its registration.
	n = f.readNode(t, "n2")
	require.Equal(t, string(core.NodeUnreachable), n.Liveness)
	require.Equal(t, "NeverJoined", n.Conditions[0].Reason)
	require.Nil(t, n.SecondsSinceHeartbeat)
}

// A node whose daemon reports other configured scalars than it joined
// with shows them once they are adopted: its allocatable and capacity in
// GET /v1/nodes/{id}, as the pool's capacity follows.
func TestNodeShowsAdoptedScalars(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 1)
	_, err := f.h.JoinNode(f.ctx, operator, "n1")
	require.NoError(t, err)
	gw, err := lease.Acquire(f.ctx, f.d.Q, "gateway:gw1", "gw1-process", lease.GatewayTTL)
	require.NoError(t, err)
	s, err := f.h.NodeSessions().OpenNodeSession(f.ctx, commands.OpenNodeSession{NodeID: "n1", Gateway: gw, GatewayID: "gw1",
		JournalID: "j1"})
	require.NoError(t, err)
	n := f.readNode(t, "n1")
	require.Equal(t, int64(64), n.VCPU.Allocatable)
	ratio := float64(n.VCPU.Capacity) / 64

	vcpu, mem := int64(8), int64(16384)
	res, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{
		GPUs:    []commands.ReportedGPU{{UUID: "GPU-n1-0", Model: "a100", MemoryMB: 81920}},
		Scalars: &commands.ReportedScalars{VCPU: &vcpu, MemoryMB: &mem}})
	require.NoError(t, err)
	require.True(t, res.Changed)
	n = f.readNode(t, "n1")
	require.Equal(t, int64(8), n.VCPU.Allocatable)
	require.Equal(t, int64(8*ratio), n.VCPU.Capacity)
	require.Equal(t, int64(16384), n.MemoryMB.Allocatable)
	require.Equal(t, int64(2000), n.DiskGB.Allocatable)
}

// A node's devices carry their GPU's version, the one quarantine, health
// and mode changes take as If-Match (an atom its GPU's): without it an
// operator could not give `nodes quarantine` or `nodes set-mode` an
// --if-match without first changing the GPU to read its answer.
func TestNodeDevicesCarryTheirGPUsVersion(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 2)
	_, err := f.h.QuarantineDevice(f.ctx, operator, commands.QuarantineDevice{DeviceID: "GPU-n1-0"})
	require.NoError(t, err)
	_, err = f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: "GPU-n1-1",
		Layout: core.GPULayout{Mode: core.GPUTimeSlice, Slots: 2}})
	require.NoError(t, err)

	versions := map[string]int64{}
	for _, id := range []string{"GPU-n1-0", "GPU-n1-1"} {
		var v int64
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT version FROM devices WHERE id = $1", id).Scan(&v))
		versions[id] = v
	}
	require.NotEqual(t, versions["GPU-n1-0"], int64(1), "the quarantine changed the GPU's version")

	n := f.readNode(t, "n1")
	atoms := 0
	for _, d := range n.Devices {
		gpu := cmp.Or(d.ParentID, d.ID)
		require.Equal(t, versions[gpu], d.Version, "%s shows its GPU's version", d.ID)
		if d.ParentID != "" {
			atoms++
		}
	}
	require.Equal(t, 2, atoms, "the time-slice GPU's two slots")
}
