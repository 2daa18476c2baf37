package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/wire"
)

// device reads a GPU's row.
func (f *fixture) device(id string) (model, health string, memoryMB int64) {
	f.t.Helper()
	require.NoError(f.t, f.d.Pool.QueryRow(f.ctx, "SELECT model, health, memory_mb FROM devices WHERE id = $1", id).
		Scan(&model, &health, &memoryMB))
	return model, health, memoryMB
}

func (f *fixture) conditionTypes(id string) []string {
	f.t.Helper()
	var out []string
	for _, c := range f.conditions(id) {
		out = append(out, c.Type)
	}
	return out
}

func reported(ids ...string) []commands.ReportedGPU {
	out := make([]commands.ReportedGPU, len(ids))
	for i, id := range ids {
		out[i] = commands.ReportedGPU{UUID: id, Model: "h100", MemoryMB: 81920}
	}
	return out
}

// The machine decides what exists: a recorded GPU the daemon does not
// report goes missing (out of placement, bookings kept), a new one is
// registered, a missing one reported again is back; a mismatch is a
// condition, not an overwrite; a report that agrees writes nothing.
func TestInventoryReconcile(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.join("n1", "metal") // GPU-n1-0, GPU-n1-1: h100, 81920 MiB
	f.gateway("gw1")
	s := f.open("n1", "gw1", "j1")
	held := f.reserve(1)
	require.Len(t, held.Reservation.DeviceIDs, 1)
	gone, kept := held.Reservation.DeviceIDs[0], "GPU-n1-0"
	if gone == kept {
		kept = "GPU-n1-1"
	}

	// Agreement changes nothing.
	res, err := f.s.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{GPUs: reported(kept, gone)})
	require.NoError(t, err)
	require.False(t, res.Changed)
	require.Zero(t, f.events(core.EventNodeInventoryReconciled, "n1"))
	version := f.node("n1").Version

	// The booked GPU is gone, GPU-n1-7 is new.
	res, err = f.s.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{GPUs: reported(kept, "GPU-n1-7")})
	require.NoError(t, err)
	require.True(t, res.Changed)
	require.Equal(t, []string{gone}, res.Missing)
	require.Equal(t, []string{"GPU-n1-7"}, res.Registered)
	require.Equal(t, version+1, f.node("n1").Version)
	_, health, _ := f.device(gone)
	require.Equal(t, commands.HealthMissing, health)
	model, health, mem := f.device("GPU-n1-7")
	require.Equal(t, []any{"h100", commands.HealthHealthy, int64(81920)}, []any{model, health, mem})
	conds := f.conditions("n1")
	require.Len(t, conds, 1)
	require.Equal(t, core.ConditionGPUMissing, conds[0].Type)
	require.Contains(t, conds[0].Message, gone)
	require.Equal(t, 1, f.events(core.EventNodeInventoryReconciled, "n1"))
	var gpuEvents int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT count(*) FROM outbox WHERE type = $1 AND subject = $2`,
		core.EventGPURegistered, core.DeviceSubject("GPU-n1-7")).Scan(&gpuEvents))
	require.Equal(t, 1, gpuEvents)
	got, err := f.h.GetReservation(f.ctx, tenant, held.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, got.State, "a missing GPU's bookings are kept")

	// Placement skips the missing GPU and takes the new one.
	two := f.reserve(2)
	require.Equal(t, core.ReservationBooked, two.Reservation.State)
	require.ElementsMatch(t, []string{kept, "GPU-n1-7"}, two.Reservation.DeviceIDs)

	// The same report again: nothing.
	f.advance(10 * time.Second)
	res, err = f.s.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{GPUs: reported("GPU-n1-7", kept)})
	require.NoError(t, err)
	require.False(t, res.Changed)
	require.Equal(t, 1, f.events(core.EventNodeInventoryReconciled, "n1"))

	// A report of a superseded session changes nothing.
	s2 := f.open("n1", "gw1", "j1")
	_, err = f.s.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{GPUs: reported("GPU-n1-0", "GPU-n1-1", "GPU-n1-7")})
	require.True(t, errors.Is(err, commands.ErrSessionSuperseded), "got %v", err)
	_, health, _ = f.device(gone)
	require.Equal(t, commands.HealthMissing, health)

	// Back, but with another model: healthy again, GPUMissing cleared,
	// GPUMismatch raised and the record kept.
	gpus := reported(gone, kept, "GPU-n1-7")
	gpus[0].Model = "a100"
	res, err = f.s.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s2.Epoch, commands.NodeInventory{GPUs: gpus})
	require.NoError(t, err)
	require.Equal(t, []string{gone}, res.Returned)
	require.Equal(t, []string{gone}, res.Mismatched)
	model, health, _ = f.device(gone)
	require.Equal(t, []string{"h100", commands.HealthHealthy}, []string{model, health})
	require.Equal(t, []string{core.ConditionGPUMismatch}, f.conditionTypes("n1"))
	require.Contains(t, f.conditions("n1")[0].Message, `model "a100" (recorded "h100")`)

	// A small memory difference (a driver's reserve) is no mismatch; the
	// model agreeing again clears GPUMismatch.
	gpus[0].Model, gpus[0].MemoryMB = "h100", 81559
	res, err = f.s.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s2.Epoch, commands.NodeInventory{GPUs: gpus})
	require.NoError(t, err)
	require.True(t, res.Changed)
	require.Empty(t, f.conditions("n1"))
	f.requireInvariants()
}

// A GPU recorded on another node is not registered on this one: a
// mismatch.
func TestInventoryGPUOfAnotherNode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.join("n1", "metal")
	f.join("n2", "metal")
	f.gateway("gw1")
	s := f.open("n1", "gw1", "j1")
	res, err := f.s.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{GPUs: reported("GPU-n1-0", "GPU-n1-1", "GPU-n2-0")})
	require.NoError(t, err)
	require.Empty(t, res.Registered)
	require.Equal(t, []string{"GPU-n2-0"}, res.Mismatched)
	require.Equal(t, []string{core.ConditionGPUMismatch}, f.conditionTypes("n1"))
	require.Contains(t, f.conditions("n1")[0].Message, "recorded on node n2")
	f.requireInvariants()
}

// The daemon's inventory message, over the wire, reaches the reconcile.
func TestInventoryMessageIsReconciled(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	_, url := f.liveGateway("gw1")
	ws, _ := f.connect(url, cred.Token)
	payload, err := json.Marshal(wire.NodeState{GPUs: []wire.InventoryGPU{
		{UUID: "GPU-n1-1", Name: "NVIDIA H100 80GB HBM3", Model: "h100", MemoryMB: 81559, MIGEnabled: true}}})
	require.NoError(t, err)
	msg, err := json.Marshal(wire.Message{Type: wire.TypeInventory, JournalID: "j1", Payload: payload})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, ws.Write(ctx, websocket.MessageText, msg))
	require.Eventually(t, func() bool {
		_, health, _ := f.device("GPU-n1-0")
		return health == commands.HealthMissing
	}, 10*time.Second, 10*time.Millisecond)
	_, health, _ := f.device("GPU-n1-1")
	require.Equal(t, commands.HealthHealthy, health)
	require.ElementsMatch(t, []string{core.ConditionGPUMissing, core.ConditionGPUMismatch}, f.conditionTypes("n1"),
		"GPU-n1-1 is recorded whole, and its driver says MIG mode")

	// A malformed one is logged and changes nothing; the session lives on.
	// The session's messages are handled in order, so once the inventory
	// sent after it (both GPUs back) has visibly taken effect, the
	// malformed one has been handled too.
	bad, err := json.Marshal(wire.Message{Type: wire.TypeInventory, Payload: json.RawMessage(`{"gpus":7}`)})
	require.NoError(t, err)
	both, err := json.Marshal(wire.NodeState{GPUs: []wire.InventoryGPU{
		{UUID: "GPU-n1-0", Name: "NVIDIA H100 80GB HBM3", Model: "h100", MemoryMB: 81559},
		{UUID: "GPU-n1-1", Name: "NVIDIA H100 80GB HBM3", Model: "h100", MemoryMB: 81559}}})
	require.NoError(t, err)
	restore, err := json.Marshal(wire.Message{Type: wire.TypeInventory, JournalID: "j1", Payload: both})
	require.NoError(t, err)
	require.NoError(t, ws.Write(ctx, websocket.MessageText, bad))
	require.NoError(t, ws.Write(ctx, websocket.MessageText, restore))
	require.Eventually(t, func() bool {
		_, health, _ := f.device("GPU-n1-0")
		return health == commands.HealthHealthy
	}, 10*time.Second, 10*time.Millisecond)
	require.True(t, f.session("n1").Connected)
	require.Equal(t, 2, f.events(core.EventNodeInventoryReconciled, "n1"), "one per good inventory, none for the malformed one")
	f.requireInvariants()
}

// migUUID is the MIG instance an atom is visible as (devices.mig_uuid).
func (f *fixture) migUUID(id string) *string {
	f.t.Helper()
	var u *string
	require.NoError(f.t, f.d.Pool.QueryRow(f.ctx, "SELECT mig_uuid FROM devices WHERE id = $1", id).Scan(&u))
	return u
}

// migNode joins n1 with its first GPU split into MIG instances 1g.10gb,
// 3g.40gb and 1g.10gb, and opens its session through gw1.
func (f *fixture) migNode(t *testing.T) commands.NodeSession {
	t.Helper()
	f.join("n1", "metal")
	_, err := f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: "GPU-n1-0",
		Layout: core.GPULayout{Mode: core.GPUMIG, MIG: []string{"1g.10gb", "3g.40gb", "1g.10gb"}}})
	require.NoError(t, err)
	f.gateway("gw1")
	return f.open("n1", "gw1", "j1")
}

// The MIG instances a daemon reports name its GPU's MIG atoms (what an
// assignment makes visible), paired by profile in order.
func TestInventoryNamesMIGAtoms(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := f.migNode(t)
	gpus := reported("GPU-n1-0", "GPU-n1-1")
	gpus[0].MIG = []commands.ReportedMIG{{UUID: "MIG-c", Profile: "1g.10gb", Index: 2},
		{UUID: "MIG-b", Profile: "3g.40gb", Index: 1}, {UUID: "MIG-a", Profile: "1g.10gb", Index: 0}}
	_, err := f.s.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{GPUs: gpus})
	require.NoError(t, err)
	for atom, want := range map[string]string{"GPU-n1-0/mig-0": "MIG-a", "GPU-n1-0/mig-1": "MIG-b", "GPU-n1-0/mig-2": "MIG-c"} {
		got := f.migUUID(atom)
		require.NotNil(t, got, atom)
		require.Equal(t, want, *got, atom)
	}
	// One instance fewer: that atom's UUID is cleared.
	gpus[0].MIG = gpus[0].MIG[1:]
	_, err = f.s.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{GPUs: gpus})
	require.NoError(t, err)
	require.Equal(t, "MIG-a", *f.migUUID("GPU-n1-0/mig-0"))
	require.Nil(t, f.migUUID("GPU-n1-0/mig-2"))
	f.requireInvariants()
}

// sendTwoH100s sends node n1's daemon's inventory: st, with the two H100s
// the fixture registered for it.
func sendTwoH100s(t *testing.T, ctx context.Context, ws *websocket.Conn, st wire.NodeState) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st.GPUs = []wire.InventoryGPU{
		{UUID: "GPU-n1-0", Name: "NVIDIA H100 80GB HBM3", Model: "h100", MemoryMB: 81559},
		{UUID: "GPU-n1-1", Name: "NVIDIA H100 80GB HBM3", Model: "h100", MemoryMB: 81559}}
	payload, err := json.Marshal(st)
	require.NoError(t, err)
	msg, err := json.Marshal(wire.Message{Type: wire.TypeInventory, JournalID: "j1", Payload: payload})
	require.NoError(t, err)
	require.NoError(t, ws.Write(ctx, websocket.MessageText, msg))
}

// A daemon that cannot isolate workloads says why in its inventory message;
// the node's WorkloadsRefused condition carries the reason until a later
// inventory comes without one.
func TestInventoryMessageWorkloadsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	_, url := f.liveGateway("gw1")
	ws, _ := f.connect(url, cred.Token)
	send := func(refused string) {
		t.Helper()
		sendTwoH100s(t, f.ctx, ws, wire.NodeState{WorkloadsRefused: refused})
	}

	const why = "workloads are refused on this node: the daemon is not root"
	send(why)
	require.Eventually(t, func() bool { return len(f.conditions("n1")) == 1 }, 10*time.Second, 10*time.Millisecond)
	c := f.conditions("n1")[0]
	require.Equal(t, core.ConditionWorkloadsRefused, c.Type)
	require.Equal(t, why, c.Message)
	require.Equal(t, 1, f.events(core.EventNodeInventoryReconciled, "n1"))
	require.True(t, f.session("n1").Connected, "the session lives on: the daemon still takes assignments")

	// The machine fixed and the daemon reconnected: its inventory clears
	// the condition.
	send("")
	require.Eventually(t, func() bool { return len(f.conditions("n1")) == 0 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 2, f.events(core.EventNodeInventoryReconciled, "n1"))
	f.requireInvariants()
}

// A daemon that only measures its allocations' disk says so in its
// inventory message, and the node shows it (DiskNotEnforced) until a later
// inventory reports a file system limit.
func TestInventoryMessageDiskNotEnforced(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	_, url := f.liveGateway("gw1")
	ws, _ := f.connect(url, cred.Token)
	send := func(limit string) { t.Helper(); sendTwoH100s(t, f.ctx, ws, wire.NodeState{DiskLimit: limit}) }

	send(wire.DiskLimitMeasured)
	require.Eventually(t, func() bool { return len(f.conditions("n1")) == 1 }, 10*time.Second, 10*time.Millisecond)
	c := f.conditions("n1")[0]
	require.Equal(t, core.ConditionDiskNotEnforced, c.Type)
	require.Equal(t, "Measured", c.Reason)

	send(wire.DiskLimitFilesystem)
	require.Eventually(t, func() bool { return len(f.conditions("n1")) == 0 }, 10*time.Second, 10*time.Millisecond)
	f.requireInvariants()
}

// A session's daemon has a few inventories reconciled, then one every 10
// s: the ones it sends faster are dropped, so a daemon cannot make the
// database write as fast as it can send.
func TestInventoriesOfASessionAreBounded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	var handled atomic.Int32
	g := &gateway.Gateway{ID: "gw1", Owner: "gw1-process", Commands: f.s, OnMessage: func(_ string, _ int64, m wire.Message) {
		if m.Type == wire.TypeInventory {
			handled.Add(1)
		}
	}}
	require.NoError(t, g.Renew(f.ctx))
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	ws, _ := f.connect("ws://"+strings.TrimPrefix(srv.URL, "http://")+wire.Path, cred.Token)
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	for i := range 8 {
		writeFlappingInventory(t, ctx, ws, i)
	}
	require.Eventually(t, func() bool { return handled.Load() == 8 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 4, f.events(core.EventNodeInventoryReconciled, "n1"), "four reconciled, four dropped")
	require.True(t, f.session("n1").Connected, "the session lives on")
}

// A WorkloadsRefused reason PostgreSQL cannot store in the node's
// conditions (a NUL byte: jsonb refuses \u0000) is made storable, so it
// cannot fail the whole inventory and leave the node's GPUs unreconciled
// at every connect.
func TestInventoryWorkloadsRefusedWithNULIsStored(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.join("n1", "metal")
	f.gateway("gw1")
	s := f.open("n1", "gw1", "j1")
	res, err := f.s.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{
		GPUs: reported("GPU-n1-0"), WorkloadsRefused: "no runc\x00 here\xff"})
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-n1-1"}, res.Missing)
	_, health, _ := f.device("GPU-n1-1")
	require.Equal(t, commands.HealthMissing, health)
	var msg string
	for _, c := range f.conditions("n1") {
		if c.Type == core.ConditionWorkloadsRefused {
			msg = c.Message
		}
	}
	require.Equal(t, "no runc\uFFFD here\uFFFD", msg)
	f.requireInvariants()
}

// A MIG instance reported with a UUID that is not a device's name (a NUL
// byte PostgreSQL refuses, a megabyte, a comma that would name a second
// device in CUDA_VISIBLE_DEVICES) names no atom: it cannot fail the
// inventory it came with, nor reach an assignment.
func TestInventoryIgnoresMalformedMIGUUIDs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := f.migNode(t)
	gpus := reported("GPU-n1-0", "GPU-n1-1")
	gpus[0].MIG = []commands.ReportedMIG{{UUID: "MIG-x\x00", Profile: "1g.10gb", Index: 0},
		{UUID: strings.Repeat("M", 1<<20), Profile: "3g.40gb", Index: 1}, {UUID: "MIG-a", Profile: "1g.10gb", Index: 2},
		{UUID: "MIG-b,GPU-n1-1", Profile: "1g.10gb", Index: 3},
		{UUID: "MIG-GPU-n1-0/2/0", Profile: "3g.40gb", Index: 4}} // the form of drivers before R470
	_, err := f.s.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{GPUs: gpus})
	require.NoError(t, err)
	require.NotNil(t, f.migUUID("GPU-n1-0/mig-0"))
	require.Equal(t, "MIG-a", *f.migUUID("GPU-n1-0/mig-0"))
	require.NotNil(t, f.migUUID("GPU-n1-0/mig-1"))
	require.Equal(t, "MIG-GPU-n1-0/2/0", *f.migUUID("GPU-n1-0/mig-1"))
	require.Nil(t, f.migUUID("GPU-n1-0/mig-2"))
	f.requireInvariants()
}

// A daemon that reports thousands of GPUs (a stolen credential's flood, a
// broken nvidia-smi) registers none past the node's 64th: no node has more,
// and each would be a bookable GPU. Its inventory is read up to its 64th
// entry, and the node's record says so in one mismatch.
func TestInventoryRegistersNoGPUBeyondANodesCap(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.join("n1", "metal") // two GPUs
	f.gateway("gw1")
	s := f.open("n1", "gw1", "j1")
	ids := []string{"GPU-n1-0", "GPU-n1-1"}
	for i := range 5000 {
		ids = append(ids, fmt.Sprintf("GPU-flood-%d", i))
	}
	res, err := f.s.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{GPUs: reported(ids...)})
	require.NoError(t, err)
	require.Len(t, res.Registered, core.MaxNodeGPUs-2)
	var n int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM devices WHERE node_id = 'n1' AND parent_id IS NULL").Scan(&n))
	require.Equal(t, core.MaxNodeGPUs, n)
	_, health, _ := f.device("GPU-n1-1")
	require.Equal(t, "healthy", health, "the GPUs it had are still reported")
	var mismatch string
	for _, c := range res.Conditions {
		if c.Type == core.ConditionGPUMismatch {
			mismatch = c.Message
		}
	}
	require.Contains(t, mismatch, "5002 GPUs reported, a node has at most 64: the rest ignored")

	// A second report with more new GPUs registers none: the node is full.
	more := append(slices.Clone(ids[:core.MaxNodeGPUs-1]), "GPU-late")
	res, err = f.s.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{GPUs: reported(more...)})
	require.NoError(t, err)
	require.Empty(t, res.Registered)
	f.requireInvariants()

	_, err = f.h.RegisterNode(f.ctx, operator, commands.RegisterNode{ID: "n2", PoolID: "metal",
		GPUs: make([]commands.GPUInventory, core.MaxNodeGPUs+1)})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err))
}

// The bound is the node's, not its session's: a daemon that reconnects
// after using it up (a stolen credential churning sessions) has no
// inventory reconciled until the bound allows one again. Each session got
// a fresh allowance before, and a daemon reporting 64 GPUs gone, then
// back, at every reconnect made the database write 50,000 events in 20 s.
func TestInventoriesOfANodeAreBoundedAcrossItsSessions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	var handled atomic.Int32
	var clock sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := &gateway.Gateway{ID: "gw1", Owner: "gw1-process", Commands: f.s,
		Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now },
		OnMessage: func(_ string, _ int64, m wire.Message) {
			if m.Type == wire.TypeInventory {
				handled.Add(1)
			}
		}}
	require.NoError(t, g.Renew(f.ctx))
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	url := "ws://" + strings.TrimPrefix(srv.URL, "http://") + wire.Path
	sent := int32(0)
	report := func(ws *websocket.Conn, n int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
		defer cancel()
		for range n {
			writeFlappingInventory(t, ctx, ws, int(sent))
			sent++
		}
		require.Eventually(t, func() bool { return handled.Load() == sent }, 10*time.Second, 10*time.Millisecond)
	}

	first, _ := f.connect(url, cred.Token)
	report(first, 6)
	require.Equal(t, 4, f.events(core.EventNodeInventoryReconciled, "n1"), "four reconciled, two dropped")
	for range 3 {
		ws, _ := f.connect(url, cred.Token)
		report(ws, 2)
	}
	require.Equal(t, 4, f.events(core.EventNodeInventoryReconciled, "n1"), "reconnecting brings no new allowance")

	clock.Lock()
	now = now.Add(10 * time.Second)
	clock.Unlock()
	ws, _ := f.connect(url, cred.Token)
	report(ws, 2)
	require.Equal(t, 5, f.events(core.EventNodeInventoryReconciled, "n1"), "one more after 10 s")
	f.requireInvariants()
}

// writeFlappingInventory sends n1's i-th inventory of a flapping GPU: each
// one a change, GPU-n1-0 missing (even i), then back (odd i).
func writeFlappingInventory(t *testing.T, ctx context.Context, ws *websocket.Conn, i int) {
	t.Helper()
	gpu := func(i int) wire.InventoryGPU {
		return wire.InventoryGPU{UUID: fmt.Sprintf("GPU-n1-%d", i), Name: "NVIDIA H100 80GB HBM3", Model: "h100", MemoryMB: 81559}
	}
	st := wire.NodeState{GPUs: []wire.InventoryGPU{gpu(1)}}
	if i%2 == 1 {
		st.GPUs = append(st.GPUs, gpu(0))
	}
	payload, err := json.Marshal(st)
	require.NoError(t, err)
	msg, err := json.Marshal(wire.Message{Type: wire.TypeInventory, JournalID: "j1", Payload: payload})
	require.NoError(t, err)
	require.NoError(t, ws.Write(ctx, websocket.MessageText, msg))
}

// A daemon's inventory says which GPUs have no MIG (nvidia-smi: MIG mode
// N/A), over the wire as migCapable; a MIG layout on such a GPU is then
// refused whatever its model's name says, and one on a GPU it reports
// with MIG is taken.
func TestInventoryMessageMIGCapable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	_, url := f.liveGateway("gw1")
	ws, _ := f.connect(url, cred.Token)
	no, yes := false, true
	st := wire.NodeState{GPUs: []wire.InventoryGPU{
		{UUID: "GPU-n1-0", Name: "NVIDIA H100 80GB HBM3", Model: "h100", MemoryMB: 81559, MIGCapable: &no},
		{UUID: "GPU-n1-1", Name: "NVIDIA H100 80GB HBM3", Model: "h100", MemoryMB: 81559, MIGCapable: &yes}}}
	payload, err := json.Marshal(st)
	require.NoError(t, err)
	require.Contains(t, string(payload), `"migCapable":false`)
	msg, err := json.Marshal(wire.Message{Type: wire.TypeInventory, JournalID: "j1", Payload: payload})
	require.NoError(t, err)
	require.NoError(t, ws.Write(f.ctx, websocket.MessageText, msg))
	capable := func(id string) *bool {
		var c *bool
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT mig_capable FROM devices WHERE id = $1", id).Scan(&c))
		return c
	}
	require.Eventually(t, func() bool { c := capable("GPU-n1-0"); return c != nil && !*c }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, &yes, capable("GPU-n1-1"))

	mig := core.GPULayout{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "3g.40gb"}}
	_, err = f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: "GPU-n1-0", Layout: mig})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "GPU GPU-n1-0 (model h100) cannot be partitioned with MIG")
	_, err = f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: "GPU-n1-1", Layout: mig})
	require.NoError(t, err)
	f.requireInvariants()
}
