package gateway_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/wire"
)

// A daemon stopped gracefully stops its instances with no session to
// report them on; its inventory at the next connect no longer lists them.
// The control plane must not show them running until the window ends: a
// running instance the inventory does not list, past the grace, fails as
// lost; one it lists keeps running; an inventory without the list judges
// nothing.
func TestInventoryEndsInstancesTheDaemonNoLongerRuns(t *testing.T) {
	t.Parallel()
	f := setup(t)
	d, assign, insts := f.runningInstances(t, 2)
	gone, kept := insts[0], insts[1]
	var p wire.AssignPayload
	require.NoError(t, json.Unmarshal(assign.Payload, &p))

	inventory := func(running []wire.RunningInstance) {
		st, err := json.Marshal(wire.NodeState{Assignments: []wire.AssignPayload{p}, Instances: running,
			ObservedGeneration: 1, GPUs: []wire.InventoryGPU{{UUID: "GPU-n1-0", Model: "h100", MemoryMB: 81920},
				{UUID: "GPU-n1-1", Model: "h100", MemoryMB: 81920}}})
		require.NoError(t, err)
		d.send(wire.Message{Type: wire.TypeInventory, JournalID: "j1", ObservedGeneration: 1, Payload: st})
	}
	f.d.AdvanceSimClock(t, commands.InstanceReportGrace)
	// Without the list: nothing is judged.
	inventory(nil)
	// With it: the one it lists runs on, the other is stopped.
	inventory([]wire.RunningInstance{{InstanceID: kept.ID, AllocationID: p.AllocationID, PID: 42}})
	require.Eventually(t, func() bool { s, _ := f.instanceState(gone.ID); return s == "failed" },
		10*time.Second, 5*time.Millisecond, "an instance its node no longer runs is not running")
	_, reason := f.instanceState(gone.ID)
	require.Contains(t, reason, "lost: its node's daemon no longer runs it")
	state, _ := f.instanceState(kept.ID)
	require.Equal(t, "running", state)
	got, err := f.h.GetReservation(f.ctx, member, gone.ReservationID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationActive, got.State, "the reservation is not touched")
	f.requireInvariants()
}

// A daemon's mid-session report of its machine (what it holds and runs
// null) changes its GPUs and judges nothing else: no assignment is pushed
// again or taken back, no instance is ended, whatever jobs are in flight.
func TestMachineReportJudgesNoAssignmentOrInstance(t *testing.T) {
	t.Parallel()
	f := setup(t)
	d, _, ins := f.runningInstance(t)
	jobs := func() int {
		var n int
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM node_commands WHERE node_id = 'n1'").Scan(&n))
		return n
	}
	before := jobs()

	f.d.AdvanceSimClock(t, commands.InstanceReportGrace)
	machine := func(gpus ...string) {
		st := wire.NodeState{ObservedGeneration: 1}
		for _, id := range gpus {
			st.GPUs = append(st.GPUs, wire.InventoryGPU{UUID: id, Model: "h100", MemoryMB: 81920})
		}
		b, err := json.Marshal(st)
		require.NoError(t, err)
		d.send(wire.Message{Type: wire.TypeInventory, JournalID: "j1", ObservedGeneration: 1, Payload: b})
	}
	machine("GPU-n1-0") // GPU-n1-1 fell off the bus
	require.Eventually(t, func() bool { _, h, _ := f.device("GPU-n1-1"); return h == commands.HealthMissing },
		10*time.Second, 5*time.Millisecond)
	machine("GPU-n1-0", "GPU-n1-1") // and came back; the gateway handles a session's messages in order
	require.Eventually(t, func() bool { _, h, _ := f.device("GPU-n1-1"); return h == "healthy" },
		10*time.Second, 5*time.Millisecond)

	require.Equal(t, before, jobs(), "no assign pushed again, no unassign")
	state, _ := f.instanceState(ins.ID)
	require.Equal(t, "running", state)
	f.requireInvariants()
}
