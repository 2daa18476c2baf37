package commands_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/wire"
)

// nodeConditions reads a node row's conditions.
func (f *fixture) nodeConditions(t *testing.T, id string) map[string]commands.NodeCondition {
	t.Helper()
	var raw []byte
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT conditions FROM nodes WHERE id = $1", id).Scan(&raw))
	var conds []commands.NodeCondition
	require.NoError(t, json.Unmarshal(raw, &conds))
	out := map[string]commands.NodeCondition{}
	for _, c := range conds {
		out[c.Type] = c
	}
	return out
}

// lastInventoryEvent is the data of the node's latest
// node.inventory_reconciled.
func (f *fixture) lastInventoryEvent(t *testing.T, node string) (ev struct {
	Conditions []commands.NodeCondition `json:"conditions"`
	Version    int64                    `json:"version"`
}) {
	t.Helper()
	var raw []byte
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT data FROM outbox WHERE type = $1 AND subject = $2
		ORDER BY txid DESC, seq DESC LIMIT 1`, core.EventNodeInventoryReconciled, core.NodeSubject(node)).Scan(&raw))
	require.NoError(t, json.Unmarshal(raw, &ev))
	return ev
}

// A daemon that cannot isolate workloads says why in its inventory: the
// node's WorkloadsRefused condition carries that reason, through the same
// version-guarded write and node.inventory_reconciled as the GPU
// conditions; the same report again writes nothing, another reason updates
// the message (since the first), and a report without one clears it.
func TestInventoryWorkloadsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive, exclusive)
	d := f.connect(t, "n1", "j1", 0)
	report := func(refused string, ids ...string) commands.InventoryResult {
		t.Helper()
		inv := commands.NodeInventory{WorkloadsRefused: refused}
		for _, id := range ids {
			inv.GPUs = append(inv.GPUs, commands.ReportedGPU{UUID: id, Model: "a100", MemoryMB: 81920})
		}
		res, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, inv)
		require.NoError(t, err)
		return res
	}
	version := func() int64 {
		var v int64
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT version FROM nodes WHERE id = $1", "n1").Scan(&v))
		return v
	}

	// A daemon that runs workloads and agrees with the record: nothing.
	require.False(t, report("", gpus...).Changed)
	require.Zero(t, f.countEvents(t, core.EventNodeInventoryReconciled))
	v0 := version()

	// It cannot isolate: the condition with its reason, one event.
	raisedAt := f.d.Now(t)
	res := report("workloads are refused on this node: not root", gpus...)
	require.True(t, res.Changed)
	require.Equal(t, v0+1, res.Version)
	require.Equal(t, v0+1, version())
	c, ok := f.nodeConditions(t, "n1")[core.ConditionWorkloadsRefused]
	require.True(t, ok, "WorkloadsRefused raised")
	require.True(t, c.Status)
	require.Equal(t, "CannotIsolate", c.Reason)
	require.Equal(t, "workloads are refused on this node: not root", c.Message)
	require.True(t, c.Since.Equal(raisedAt), "since %v, want %v", c.Since, raisedAt)
	require.Equal(t, 1, f.countEvents(t, core.EventNodeInventoryReconciled))
	ev := f.lastInventoryEvent(t, "n1")
	require.Equal(t, v0+1, ev.Version)
	require.Len(t, ev.Conditions, 1)
	require.Equal(t, c.Condition, ev.Conditions[0].Condition, "the event carries the condition")

	// The same report later: nothing written, no second event.
	f.d.AdvanceSimClock(t, time.Minute)
	require.False(t, report("workloads are refused on this node: not root", gpus...).Changed)
	require.Equal(t, 1, f.countEvents(t, core.EventNodeInventoryReconciled))
	require.Equal(t, v0+1, version())

	// Another reason, with a GPU gone: both conditions; the refusal keeps
	// the time it was first raised.
	res = report("workloads are refused on this node: runc not found", gpus[0])
	require.True(t, res.Changed)
	conds := f.nodeConditions(t, "n1")
	require.Len(t, conds, 2)
	require.Contains(t, conds[core.ConditionGPUMissing].Message, gpus[1])
	c = conds[core.ConditionWorkloadsRefused]
	require.Equal(t, "workloads are refused on this node: runc not found", c.Message)
	require.True(t, c.Since.Equal(raisedAt), "since kept: %v, want %v", c.Since, raisedAt)
	require.Equal(t, 2, f.countEvents(t, core.EventNodeInventoryReconciled))

	// A report without a reason clears it; the GPU condition stays.
	res = report("", gpus[0])
	require.True(t, res.Changed)
	conds = f.nodeConditions(t, "n1")
	require.NotContains(t, conds, core.ConditionWorkloadsRefused)
	require.Contains(t, conds, core.ConditionGPUMissing)
	require.Equal(t, 3, f.countEvents(t, core.EventNodeInventoryReconciled))
	ev = f.lastInventoryEvent(t, "n1")
	require.Len(t, ev.Conditions, 1)
	require.Equal(t, core.ConditionGPUMissing, ev.Conditions[0].Type)

	// ReconcileNodeInventory (GPUs alone) is a daemon that runs workloads:
	// with everything back, no condition is left.
	_, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, commands.NodeInventory{GPUs: []commands.ReportedGPU{
		{UUID: gpus[0], Model: "a100", MemoryMB: 81920}, {UUID: gpus[1], Model: "a100", MemoryMB: 81920}}})
	require.NoError(t, err)
	require.Empty(t, f.nodeConditions(t, "n1"))

	// A report of a superseded session changes nothing.
	stale := d.epoch
	d = f.connect(t, "n1", "j1", 0)
	_, err = f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", stale, commands.NodeInventory{WorkloadsRefused: "stale"})
	require.True(t, errors.Is(err, commands.ErrSessionSuperseded), "got %v", err)
	require.Empty(t, f.nodeConditions(t, "n1"))
	f.requireInvariants(t)
}

// A daemon that runs workloads but only measures their disk says so: the
// node's DiskNotEnforced condition (reason Measured), so that an operator
// sees which nodes an allocation can overshoot its disk on; one without
// isolation, NotIsolated. A report of a file system limit clears it, and
// neither a daemon that refuses workloads (nothing to limit) nor one that
// does not say (an earlier release) raises it.
func TestInventoryDiskNotEnforced(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	report := func(inv commands.NodeInventory) map[string]commands.NodeCondition {
		t.Helper()
		inv.GPUs = []commands.ReportedGPU{{UUID: gpus[0], Model: "a100", MemoryMB: 81920}}
		_, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, inv)
		require.NoError(t, err)
		return f.nodeConditions(t, "n1")
	}

	require.NotContains(t, report(commands.NodeInventory{DiskLimit: wire.DiskLimitFilesystem}), core.ConditionDiskNotEnforced)
	require.NotContains(t, report(commands.NodeInventory{}), core.ConditionDiskNotEnforced, "an earlier daemon says nothing")

	c, ok := report(commands.NodeInventory{DiskLimit: wire.DiskLimitMeasured})[core.ConditionDiskNotEnforced]
	require.True(t, ok, "raised")
	require.True(t, c.Status)
	require.Equal(t, "Measured", c.Reason)
	require.Contains(t, c.Message, "every 10 s")
	require.Equal(t, c.Condition, f.lastInventoryEvent(t, "n1").Conditions[0].Condition, "the event carries it")

	c = report(commands.NodeInventory{DiskLimit: wire.DiskLimitNone})[core.ConditionDiskNotEnforced]
	require.Equal(t, "NotIsolated", c.Reason)

	conds := report(commands.NodeInventory{DiskLimit: wire.DiskLimitMeasured, WorkloadsRefused: "not root"})
	require.NotContains(t, conds, core.ConditionDiskNotEnforced, "no workload runs there to limit")
	require.Contains(t, conds, core.ConditionWorkloadsRefused)

	report(commands.NodeInventory{DiskLimit: wire.DiskLimitMeasured})
	require.NotContains(t, report(commands.NodeInventory{DiskLimit: wire.DiskLimitFilesystem}), core.ConditionDiskNotEnforced,
		"a file system limit clears it")
}

// A daemon's reason is kept bounded and valid UTF-8 whatever it sends.
func TestInventoryWorkloadsRefusedBounded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	long := "  cannot isolate: " + strings.Repeat("é", 2*commands.WorkloadsRefusedMaxBytes) + "\xff"
	_, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, commands.NodeInventory{
		GPUs: []commands.ReportedGPU{{UUID: gpus[0], Model: "a100", MemoryMB: 81920}}, WorkloadsRefused: long})
	require.NoError(t, err)
	msg := f.nodeConditions(t, "n1")[core.ConditionWorkloadsRefused].Message
	require.LessOrEqual(t, len(msg), commands.WorkloadsRefusedMaxBytes)
	require.Greater(t, len(msg), commands.WorkloadsRefusedMaxBytes-8)
	require.True(t, utf8.ValidString(msg))
	require.True(t, strings.HasPrefix(msg, "cannot isolate: éé"), msg[:32])
	require.True(t, strings.HasSuffix(msg, "…"))

	// Only space is no reason: nothing refused.
	_, err = f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, commands.NodeInventory{
		GPUs: []commands.ReportedGPU{{UUID: gpus[0], Model: "a100", MemoryMB: 81920}}, WorkloadsRefused: " \n"})
	require.NoError(t, err)
	require.Empty(t, f.nodeConditions(t, "n1"))
}

// A daemon names only GPUs: a reported uuid that is no GPU's — one shaped
// like another GPU's atom ("<uuid>/s0"), or megabytes long — registers
// nothing and touches no other device, and what the node's conditions
// say of it is cut short; an operator registering one is refused.
func TestInventoryIgnoresWhatIsNoGPUUUID(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive)
	f.node(t, "n2", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	devices := func() (n int) {
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM devices").Scan(&n))
		return n
	}
	before := devices()
	atom := "GPU-n2-0/s0"
	huge := "GPU-" + strings.Repeat("x", 1<<20)
	res, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, commands.NodeInventory{GPUs: []commands.ReportedGPU{
		{UUID: gpus[0], Model: "a100", MemoryMB: 81920},
		{UUID: atom, Model: "a100", MemoryMB: 81920},
		{UUID: huge, Model: strings.Repeat("m", 1<<20), MemoryMB: 81920},
		{UUID: "GPU-n1-new", Model: strings.Repeat("m", 1<<20), MemoryMB: 81920},
	}})
	require.NoError(t, err)
	require.Empty(t, res.Registered, "nor a GPU whose model is no model's name")
	require.Len(t, res.Mismatched, 3)
	require.Equal(t, before, devices(), "nothing registered, no atom taken")
	msg := f.nodeConditions(t, "n1")[core.ConditionGPUMismatch].Message
	require.Contains(t, msg, `"GPU-n2-0/s0" is not a GPU uuid; ignored`)
	require.LessOrEqual(t, len(msg), commands.MismatchMaxBytes)

	_, err = f.h.RegisterNode(f.ctx, operator, commands.RegisterNode{ID: "n3", PoolID: "fra1-gpu",
		GPUs: []commands.GPUInventory{{UUID: "GPU-n3-0/mig-1", Model: "a100", MemoryMB: 81920}}})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err))
	_, err = f.h.RegisterNode(f.ctx, operator, commands.RegisterNode{ID: "n3", PoolID: "fra1-gpu",
		GPUs: []commands.GPUInventory{{UUID: "GPU-n3-0", Model: strings.Repeat("m", core.MaxGPUModel+1), MemoryMB: 81920}}})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err))
}

// A GPU whose driver reports MIG mode enabled while the record shares it
// whole or in slots is a mismatch: its tenants would get a device they
// cannot run on. Recorded in MIG mode, it is none.
func TestInventoryMIGModeEnabledOnAWholeGPUIsAMismatch(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	report := func(migEnabled bool) map[string]commands.NodeCondition {
		t.Helper()
		_, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, commands.NodeInventory{GPUs: []commands.ReportedGPU{
			{UUID: gpus[0], Model: "a100", MemoryMB: 81920, MIGEnabled: migEnabled}}})
		require.NoError(t, err)
		return f.nodeConditions(t, "n1")
	}
	require.NotContains(t, report(false), core.ConditionGPUMismatch)
	c, ok := report(true)[core.ConditionGPUMismatch]
	require.True(t, ok, "raised")
	require.Equal(t, gpus[0]+" reported with MIG mode enabled (recorded mode exclusive)", c.Message)
	require.NotContains(t, report(false), core.ConditionGPUMismatch, "cleared when the driver agrees")

	_, err := f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: gpus[0],
		Layout: core.GPULayout{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "3g.40gb"}}})
	require.NoError(t, err)
	require.NotContains(t, report(true), core.ConditionGPUMismatch, "recorded in MIG mode")
}
