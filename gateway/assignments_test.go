package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/wire"
)

var member = core.Actor{Tenant: "acme", Identity: "bob@acme", Role: core.RoleMember}

// commands does not import the protocol: its copy of the refusal prefix
// must be the protocol's.
func TestRefusedPrefixAgrees(t *testing.T) {
	require.Equal(t, wire.RefusedPrefix, commands.AssignRefusedPrefix)
}

// wireDaemon is the daemon's end of a session, driven by the test.
type wireDaemon struct {
	f    *fixture
	ws   *websocket.Conn
	msgs chan wire.Message
}

// wireDaemon connects a daemon that, as one does after its welcome, sends
// its inventory (the node's recorded GPUs, holding and running nothing),
// and returns once the gateway reconciled it: its session may be sent
// assigns from then on.
func (f *fixture) wireDaemon(url, token string) (*wireDaemon, int64) {
	f.t.Helper()
	d, epoch, node := f.wireDaemonUnreported(url, token)
	rows, err := f.d.Pool.Query(f.ctx, "SELECT id, model, memory_mb FROM devices WHERE node_id = $1 AND kind = 'gpu'", node)
	require.NoError(f.t, err)
	gpus, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (wire.InventoryGPU, error) {
		var g wire.InventoryGPU
		return g, r.Scan(&g.UUID, &g.Model, &g.MemoryMB)
	})
	require.NoError(f.t, err)
	st, err := json.Marshal(wire.NodeState{GPUs: gpus, Assignments: []wire.AssignPayload{}, Instances: []wire.RunningInstance{}})
	require.NoError(f.t, err)
	d.send(wire.Message{Type: wire.TypeInventory, JournalID: "j1", Payload: st})
	require.Eventually(f.t, func() bool {
		r := f.session(node).InventoryReconciledEpoch
		return r != nil && *r == epoch
	}, 10*time.Second, 5*time.Millisecond, "the daemon's inventory is reconciled")
	return d, epoch
}

// wireDaemonUnreported connects a daemon that has sent nothing after its
// hello: the gateway sends it no assign until it reports its inventory.
// It returns the session's epoch and the node's id.
func (f *fixture) wireDaemonUnreported(url, token string) (*wireDaemon, int64, string) {
	f.t.Helper()
	ws, welcome := f.connect(url, token)
	d := &wireDaemon{f: f, ws: ws, msgs: make(chan wire.Message, 64)}
	go func() {
		for {
			_, data, err := ws.Read(f.ctx)
			if err != nil {
				close(d.msgs)
				return
			}
			var m wire.Message
			if json.Unmarshal(data, &m) == nil {
				d.msgs <- m
			}
		}
	}()
	return d, welcome.SessionEpoch, welcome.NodeID
}

func (d *wireDaemon) next() wire.Message {
	d.f.t.Helper()
	select {
	case m, ok := <-d.msgs:
		require.True(d.f.t, ok, "session closed")
		return m
	case <-time.After(10 * time.Second):
		d.f.t.Fatal("no message from the gateway")
	}
	return wire.Message{}
}

func (d *wireDaemon) send(m wire.Message) {
	d.f.t.Helper()
	b, err := json.Marshal(m)
	require.NoError(d.f.t, err)
	ctx, cancel := context.WithTimeout(d.f.ctx, 10*time.Second)
	defer cancel()
	require.NoError(d.f.t, d.ws.Write(ctx, websocket.MessageText, b))
}

func (f *fixture) jobState(id string) string {
	f.t.Helper()
	c, err := f.d.Q.NodeCommandGet(f.ctx, id)
	require.NoError(f.t, err)
	return c.State
}

func (f *fixture) instanceState(id string) (string, string) {
	f.t.Helper()
	i, err := f.d.Q.InstanceGet(f.ctx, id)
	require.NoError(f.t, err)
	return i.State, i.Reason
}

// runningInstance is runningInstances of one.
func (f *fixture) runningInstance(t *testing.T) (*wireDaemon, wire.Message, core.Instance) {
	t.Helper()
	d, assign, insts := f.runningInstances(t, 1)
	return d, assign, insts[0]
}

// runningInstances joins n1 through a live gateway, with a daemon over the
// wire, and runs n instances of one active reservation on it: the daemon
// acknowledged the allocation's assign and each instance's start. It
// returns the daemon, the assign it got and the instances.
func (f *fixture) runningInstances(t *testing.T, n int) (*wireDaemon, wire.Message, []core.Instance) {
	t.Helper()
	cred := f.join("n1", "metal")
	g, url := f.liveGateway("gw1")
	d, _ := f.wireDaemon(url, cred.Token)
	rsv := f.activeReservation(t)
	var insts []core.Instance
	for range n {
		inst, err := f.h.CreateInstance(f.ctx, member, commands.CreateInstance{ReservationID: rsv.ID})
		require.NoError(t, err)
		insts = append(insts, inst.Instance)
	}
	_, err := g.Dispatch(f.ctx, "n1")
	require.NoError(t, err)
	assign := d.next()
	require.Equal(t, wire.CommandKindAssign, assign.CommandKind)
	d.send(wire.Message{Type: wire.TypeCommandResult, CommandID: assign.CommandID, State: "succeeded", ObservedGeneration: 1})
	for range n {
		start := d.next()
		require.Equal(t, core.NodeCommandInstanceStart, start.CommandKind)
		d.send(wire.Message{Type: wire.TypeCommandResult, CommandID: start.CommandID, State: "succeeded"})
	}
	for _, inst := range insts {
		require.Eventually(t, func() bool { s, _ := f.instanceState(inst.ID); return s == "running" },
			10*time.Second, 5*time.Millisecond)
	}
	return d, assign, insts
}

// Over the wire: the booking's assign reaches the daemon, its result
// records the observed generation; the release's unassign reaches it, the
// daemon's instance.stopped report stops the instance; and an inventory
// that still holds the ended allocation has it unassigned again.
func TestAssignmentsOverTheWire(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	g, url := f.liveGateway("gw1")
	d, epoch := f.wireDaemon(url, cred.Token)

	// Instances run only on an active reservation: its window has begun.
	rsv := f.activeReservation(t)
	inst, err := f.h.CreateInstance(f.ctx, member, commands.CreateInstance{ReservationID: rsv.ID})
	require.NoError(t, err)
	_, err = g.Dispatch(f.ctx, "n1")
	require.NoError(t, err)

	assign := d.next()
	require.Equal(t, wire.TypeCommand, assign.Type)
	require.Equal(t, wire.CommandKindAssign, assign.CommandKind)
	var p wire.AssignPayload
	require.NoError(t, json.Unmarshal(assign.Payload, &p))
	alloc := p.AllocationID
	require.Equal(t, alloc, assign.AllocationID)
	require.Equal(t, rsv.ID, p.ReservationID)
	require.Equal(t, []wire.AssignedDevice{{ID: rsv.DeviceIDs[0], GPU: rsv.DeviceIDs[0], Kind: "gpu",
		Visible: rsv.DeviceIDs[0]}}, p.Devices)
	require.Equal(t, int64(1), p.Generation)
	start := d.next()
	require.Equal(t, core.NodeCommandInstanceStart, start.CommandKind, "after its allocation's assign")

	d.send(wire.Message{Type: wire.TypeCommandResult, CommandID: assign.CommandID, State: "succeeded",
		ObservedGeneration: 1})
	require.Eventually(t, func() bool { return f.jobState(assign.CommandID) == "succeeded" }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, int64(1), f.session("n1").ObservedGeneration)
	d.send(wire.Message{Type: wire.TypeCommandResult, CommandID: start.CommandID, State: "succeeded"})
	require.Eventually(t, func() bool { s, _ := f.instanceState(inst.Instance.ID); return s == "running" },
		10*time.Second, 5*time.Millisecond)

	_, err = f.h.ReleaseReservation(f.ctx, member, commands.ReleaseReservation{ReservationID: rsv.ID})
	require.NoError(t, err)
	state, _ := f.instanceState(inst.Instance.ID)
	require.Equal(t, "stopping", state)
	_, err = g.Dispatch(f.ctx, "n1")
	require.NoError(t, err)
	unassign := d.next()
	require.Equal(t, wire.CommandKindUnassign, unassign.CommandKind)
	var u wire.UnassignPayload
	require.NoError(t, json.Unmarshal(unassign.Payload, &u))
	require.Equal(t, wire.UnassignPayload{AllocationID: alloc, Reason: "reservation released", Generation: 2}, u)

	// The daemon stops the instance, reports it, then acknowledges.
	stopped, err := json.Marshal(wire.InstanceStopped{InstanceID: inst.Instance.ID, AllocationID: alloc,
		Reason: "allocation unassigned: reservation released", At: f.d.Now(t)})
	require.NoError(t, err)
	d.send(wire.Message{Type: wire.TypeInstanceStopped, AllocationID: alloc, Payload: stopped})
	d.send(wire.Message{Type: wire.TypeCommandResult, CommandID: unassign.CommandID, State: "succeeded",
		ObservedGeneration: 2})
	require.Eventually(t, func() bool { return f.jobState(unassign.CommandID) == "succeeded" }, 10*time.Second, 5*time.Millisecond)
	state, reason := f.instanceState(inst.Instance.ID)
	require.Equal(t, "stopped", state)
	require.Equal(t, "allocation unassigned: reservation released", reason, "the daemon's reason")
	require.Equal(t, int64(2), f.session("n1").ObservedGeneration)

	// An inventory that still holds the ended allocation: unassigned again.
	st, err := json.Marshal(wire.NodeState{Assignments: []wire.AssignPayload{p}, ObservedGeneration: 2,
		GPUs: []wire.InventoryGPU{{UUID: "GPU-n1-0", Model: "h100", MemoryMB: 81920},
			{UUID: "GPU-n1-1", Model: "h100", MemoryMB: 81920}}})
	require.NoError(t, err)
	d.send(wire.Message{Type: wire.TypeInventory, JournalID: "j1", ObservedGeneration: 2, Payload: st})
	key := fmt.Sprintf("unassign:%s:r%d", alloc, epoch)
	require.Eventually(t, func() bool {
		_, err := f.d.Q.NodeCommandGetByKey(f.ctx, db.NodeCommandGetByKeyParams{NodeID: "n1", TenantID: "acme",
			IdempotencyKey: key})
		return err == nil
	}, 10*time.Second, 5*time.Millisecond)
	f.requireInvariants()
}
