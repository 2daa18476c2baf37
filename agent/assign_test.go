package agent_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/wire"
)

var testJobSeq atomic.Int64

// assignment is the "assign" payload of reservation's allocation, as the
// control plane derives it: whole GPUs (the harness's nodes have
// exclusive GPUs), the allocation's scalars and the reservation's window.
func (hs *harness) assignment(reservationID string, generation int64) wire.AssignPayload {
	hs.t.Helper()
	p := wire.AssignPayload{ReservationID: reservationID, Generation: generation}
	var devices []string
	require.NoError(hs.t, hs.d.Pool.QueryRow(hs.ctx, `SELECT a.id, a.device_ids, a.vcpu, a.memory, a.disk,
		lower(r.during), upper(r.during) FROM allocations a JOIN reservations r ON r.id = a.reservation_id
		WHERE a.reservation_id = $1`, reservationID).Scan(&p.AllocationID, &devices, &p.VCPU, &p.MemoryMB, &p.DiskGB,
		&p.Start, &p.End))
	for _, d := range devices {
		p.Devices = append(p.Devices, wire.AssignedDevice{ID: d, GPU: d, Kind: "gpu", Visible: d})
	}
	return p
}

// job sends a node job straight through the gateway holding node's
// session, until the daemon reports it finished, and returns its result.
//
// Bookings go through the control plane (book, awaitAssigned); job is for
// the daemon-side tests that send made-up assignments the control plane
// never queued. The daemon treats both paths alike: its result here is
// recorded by the gateway as a job it does not know, which it logs and
// ignores.
func (hs *harness) job(node, kind, allocationID string, payload any) wire.Message {
	hs.t.Helper()
	b, err := json.Marshal(payload)
	require.NoError(hs.t, err)
	m := wire.Message{Type: wire.TypeCommand, CommandID: fmt.Sprintf("cmd_test_%s_%d", kind, testJobSeq.Add(1)),
		CommandKind: kind, AllocationID: allocationID, Payload: b}
	var res wire.Message
	require.Eventually(hs.t, func() bool {
		// A daemon that just (re)connected may not be in the gateway's map
		// yet, or only at its old connection: send again until it answers
		// (it answers a repeat from its journal).
		for _, g := range hs.gateways() {
			if _, ok := g.Sessions()[node]; ok {
				_ = g.Send(hs.ctx, node, m)
			}
		}
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			for _, r := range hs.sent(wire.TypeCommandResult) {
				if r.CommandID == m.CommandID && r.State != "running" {
					res = r
					return true
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		return false
	}, 20*time.Second, time.Millisecond, "node job %s (%s) never finished", m.CommandID, kind)
	return res
}

// assign delivers reservation's allocation to node's daemon and requires
// that it was accepted.
func (hs *harness) assign(node, reservationID string) wire.AssignPayload {
	hs.t.Helper()
	p := hs.assignment(reservationID, 0)
	res := hs.job(node, wire.CommandKindAssign, p.AllocationID, p)
	require.Equal(hs.t, "succeeded", res.State, res.Reason)
	return p
}

// Assignments travel as node jobs: the daemon refuses one that overlaps
// what it holds, reports its observed generation on results, in its hello
// and in its inventory, and keeps its assignments across a restart.
func TestAssignmentsAsNodeJobs(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	_, url := hs.gateway("gw1")
	dir := t.TempDir()
	stop := hs.daemon("n1", dir, url)
	hs.eventually("n1", core.NodeConnected)

	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	gpu := func(id string) wire.AssignedDevice {
		return wire.AssignedDevice{ID: id, GPU: id, Kind: "gpu", Visible: id}
	}
	// The jobs below are sent by hand: the node's generation is set to
	// theirs as the control plane would have (a hello's observed
	// generation is believed up to it).
	_, err := hs.d.Pool.Exec(hs.ctx, `INSERT INTO node_desired (node_id, generation) VALUES ('n1', 4)
		ON CONFLICT (node_id) DO UPDATE SET generation = 4`)
	require.NoError(t, err)
	a := wire.AssignPayload{AllocationID: "alc_a", ReservationID: "rsv_a", Devices: []wire.AssignedDevice{gpu("GPU-n1-0")},
		VCPU: 1, MemoryMB: 1024, Start: start, End: start.Add(time.Hour), Generation: 3}
	b := wire.AssignPayload{AllocationID: "alc_b", ReservationID: "rsv_b",
		Devices: []wire.AssignedDevice{gpu("GPU-n1-1"), gpu("GPU-n1-0")}, VCPU: 1, MemoryMB: 1024,
		Start: start.Add(30 * time.Minute), End: start.Add(2 * time.Hour), Generation: 4}
	ok := hs.job("n1", wire.CommandKindAssign, "alc_a", a)
	require.Equal(t, "succeeded", ok.State, ok.Reason)
	require.Equal(t, int64(3), ok.ObservedGeneration)
	refused := hs.job("n1", wire.CommandKindAssign, "alc_b", b)
	require.Equal(t, "failed", refused.State)
	require.True(t, strings.HasPrefix(refused.Reason, wire.RefusedPrefix), refused.Reason)
	require.Contains(t, refused.Reason, "device GPU-n1-0 is held by another allocation")
	require.Equal(t, int64(3), refused.ObservedGeneration)

	// A restart: the hello carries the generation, the replay the
	// assignment (not the refused one), the inventory what it holds.
	stop()
	hs.eventually("n1", core.NodeDisconnected)
	before := len(hs.sent(wire.TypeInventory))
	hs.daemon("n1", dir, url)
	hs.eventually("n1", core.NodeConnected)
	// The hello's 3 (what the journal kept), or already 4: the inventory
	// reconcile that follows it counts the refused assign as observed, and
	// may have run by now. Never below 3, as a hello that lost it would be.
	require.Contains(t, []int64{3, 4}, hs.session("n1").ObservedGeneration)
	require.Eventually(t, func() bool { return len(hs.sent(wire.TypeInventory)) > before }, 10*time.Second, 5*time.Millisecond)
	replays := hs.sent(wire.TypeReplay)
	var assigned []string
	for _, e := range replays[len(replays)-1].Journal {
		if e.Kind == "assign" {
			assigned = append(assigned, e.AllocationID)
		}
	}
	require.Equal(t, []string{"alc_a"}, assigned)
	inv := hs.sent(wire.TypeInventory)
	last := inv[len(inv)-1]
	require.Equal(t, int64(3), last.ObservedGeneration)
	var st wire.NodeState
	require.NoError(t, json.Unmarshal(last.Payload, &st))
	require.Equal(t, int64(3), st.ObservedGeneration)
	require.Len(t, st.Assignments, 1)
	require.Equal(t, a.AllocationID, st.Assignments[0].AllocationID)
	require.True(t, a.End.Equal(st.Assignments[0].End))
	require.Len(t, st.GPUs, 2)
	require.Equal(t, wire.InventoryGPU{UUID: "GPU-n1-0", Model: "H100-80GB", MemoryMB: 81920}, st.GPUs[0])
	require.Empty(t, st.Instances)

	// The allocation's devices are free again once it is unassigned.
	un := hs.job("n1", wire.CommandKindUnassign, "alc_a", wire.UnassignPayload{AllocationID: "alc_a", Generation: 5})
	require.Equal(t, "succeeded", un.State, un.Reason)
	require.Equal(t, int64(5), un.ObservedGeneration)
	b.Generation = 6
	again := hs.job("n1", wire.CommandKindAssign, "alc_b", b)
	require.Equal(t, "succeeded", again.State, again.Reason)
}

// An instance needs its allocation assigned on the node, and stops (and is
// reported stopped) when the allocation is unassigned.
func TestUnassignStopsInstances(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	g, url := hs.gateway("gw1")
	router := hs.router(g)
	hs.daemon("n1", t.TempDir(), url)
	hs.eventually("n1", core.NodeConnected)
	rsv := hs.book("n1")
	h := commands.New(hs.d.Pool, commands.Config{})
	created, err := h.CreateInstance(hs.ctx, tenant, commands.CreateInstance{ReservationID: rsv,
		Spec: core.InstanceSpec{Image: "pytorch:2", Command: `env > env.txt; echo $$ > pid; exec sleep 86400`}, IdempotencyKey: "i1"})
	require.NoError(t, err)
	id, alloc := created.Instance.ID, created.Instance.AllocationID
	require.NoError(t, router.HandleDispatch(hs.ctx, workqueue.Item{Kind: commands.KindNodeJobDispatch, Key: "n1"}))
	hs.awaitInstance(id, core.ProvisionRunning)
	dir := filepath.Join(hs.workloads, "n1", alloc, "work", "instances", id)
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}, 10*time.Second, 5*time.Millisecond)
	env, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	require.NoError(t, err)
	visible := hs.assignment(rsv, 0).Devices[0].Visible
	require.Contains(t, strings.Split(string(env), "\n"), "CUDA_VISIBLE_DEVICES="+visible, "exactly its one GPU")

	res := hs.job("n1", wire.CommandKindUnassign, alloc, wire.UnassignPayload{AllocationID: alloc, Reason: "released"})
	require.Equal(t, "succeeded", res.State, res.Reason)
	require.False(t, alive(pid), "stopped before the unassign succeeded")
	var stopped []wire.InstanceStopped
	for _, m := range hs.sent(wire.TypeInstanceStopped) {
		var p wire.InstanceStopped
		require.NoError(t, json.Unmarshal(m.Payload, &p))
		stopped = append(stopped, p)
	}
	require.Len(t, stopped, 1)
	require.Equal(t, id, stopped[0].InstanceID)
	require.Equal(t, alloc, stopped[0].AllocationID)
	require.Equal(t, "allocation unassigned: released", stopped[0].Reason)

	// A job for it now fails on the node.
	c := hs.run(tenant, exec("after", "true", false))
	require.NoError(t, g.DispatchPending(hs.ctx))
	failed := hs.awaitCommand(c.ID, core.CommandFailed)
	require.Equal(t, fmt.Sprintf("allocation %s is not assigned to this node", alloc), failed.Reason)
}

// gateways are the harness's gateways.
func (hs *harness) gateways() []*gateway.Gateway {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return append([]*gateway.Gateway(nil), hs.gws...)
}
