package commands_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/wire"
)

// job is a node job as these tests look at it.
type job struct {
	ID, Kind, Key, State, Tenant, Reason string
	AllocationID                         *string
	Generation                           *int64
	MinGeneration                        int64
	RetrySafe                            bool
	Payload                              []byte
}

// assignmentJobs are the node's assign and unassign jobs in the order they
// were queued.
func (f *fixture) assignmentJobs(t *testing.T, node string) []job {
	t.Helper()
	rows, err := f.d.Pool.Query(f.ctx, `SELECT id, kind, idempotency_key, state, tenant_id, reason, allocation_id,
		generation, min_generation, retry_safe, payload FROM node_commands
		WHERE node_id = $1 AND kind IN ('assign', 'unassign') ORDER BY seq`, node)
	require.NoError(t, err)
	defer rows.Close()
	var out []job
	for rows.Next() {
		var j job
		require.NoError(t, rows.Scan(&j.ID, &j.Kind, &j.Key, &j.State, &j.Tenant, &j.Reason, &j.AllocationID,
			&j.Generation, &j.MinGeneration, &j.RetrySafe, &j.Payload))
		out = append(out, j)
	}
	require.NoError(t, rows.Err())
	return out
}

func (f *fixture) generation(t *testing.T, node string) int64 {
	t.Helper()
	g, err := f.d.Q.NodeDesiredGeneration(f.ctx, node)
	require.NoError(t, err)
	return g
}

func (f *fixture) allocationOf(t *testing.T, reservationID string) string {
	t.Helper()
	var id string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT id FROM allocations WHERE reservation_id = $1",
		reservationID).Scan(&id))
	return id
}

// decodeAssign decodes an assign payload as the daemon does, refusing
// fields the protocol does not have.
func decodeAssign(t *testing.T, b []byte) wire.AssignPayload {
	t.Helper()
	var p wire.AssignPayload
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&p))
	return p
}

// daemon stands in for a node's daemon at the commands level: a session
// opened through gateway gw1, the jobs dispatch sends it, and its reports.
type daemon struct {
	f     *fixture
	t     *testing.T
	node  string
	gw    lease.Lease
	epoch int64
	sent  []commands.NodeJobToSend
}

// daemonMemory is a stand-in daemon's journal: the allocations it holds,
// by the assigns and unassigns it reported succeeded.
type daemonMemory struct {
	journal string
	held    map[string]time.Time
}

// connect opens a session of node's daemon and reports, as a daemon does
// right after its hello, the allocations it holds (none when it comes back
// with another journal): the session's inventory is reconciled, and
// dispatch sends it assigns.
func (f *fixture) connect(t *testing.T, node, journal string, observed int64) *daemon {
	t.Helper()
	d := f.connectUnreported(t, node, journal, observed)
	f.mu.Lock()
	m := f.daemons[node]
	if f.daemons == nil {
		f.daemons = map[string]*daemonMemory{}
	}
	if m == nil || m.journal != journal {
		m = &daemonMemory{journal: journal, held: map[string]time.Time{}}
		f.daemons[node] = m
	}
	var held []commands.ReportedAssignment
	for _, id := range slices.Sorted(maps.Keys(m.held)) {
		held = append(held, commands.ReportedAssignment{AllocationID: id, End: m.held[id]})
	}
	f.mu.Unlock()
	_, err := f.h.NodeSessions().ReconcileNodeAssignments(f.ctx, node, d.epoch, held)
	require.NoError(t, err)
	return d
}

// connectUnreported opens a session of node's daemon that has not sent
// its inventory yet: dispatch sends it no assign until the test reconciles
// one (ReconcileNodeAssignments at its epoch).
func (f *fixture) connectUnreported(t *testing.T, node, journal string, observed int64) *daemon {
	t.Helper()
	var joined bool
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT EXISTS (SELECT 1 FROM node_credentials WHERE node_id = $1)",
		node).Scan(&joined))
	if !joined {
		_, err := f.h.JoinNode(f.ctx, operator, node)
		require.NoError(t, err)
	}
	gw, err := lease.Acquire(f.ctx, f.d.Q, "gateway:gw1", "gw1-process", lease.GatewayTTL)
	require.NoError(t, err)
	s, err := f.h.NodeSessions().OpenNodeSession(f.ctx, commands.OpenNodeSession{NodeID: node, Gateway: gw, GatewayID: "gw1",
		JournalID: journal, ObservedGeneration: observed})
	require.NoError(t, err)
	return &daemon{f: f, t: t, node: node, gw: gw, epoch: s.Epoch}
}

// dispatch runs the node's dispatch and returns the report.
func (d *daemon) dispatch() commands.DispatchReport {
	d.t.Helper()
	gw, err := lease.Acquire(d.f.ctx, d.f.d.Q, "gateway:gw1", "gw1-process", lease.GatewayTTL) // renewed
	require.NoError(d.t, err)
	d.gw = gw
	rep, err := d.f.h.NodeSessions().DispatchNodeJobs(d.f.ctx, d.gw, d.node, d.epoch)
	require.NoError(d.t, err)
	d.sent = append(d.sent, rep.ToSend...)
	return rep
}

// report is the daemon's result of a job. A succeeded assign or unassign
// it was sent changes what it holds (its next connect reports it).
func (d *daemon) report(jobID, state, reason string, observed int64) {
	d.t.Helper()
	require.NoError(d.t, d.f.h.NodeSessions().RecordNodeJobResult(d.f.ctx, commands.RecordNodeJobResult{NodeID: d.node, Epoch: d.epoch,
		JobID: jobID, State: state, Reason: reason, ObservedGeneration: observed}))
	if state != "succeeded" {
		return
	}
	i := slices.IndexFunc(d.sent, func(j commands.NodeJobToSend) bool { return j.ID == jobID })
	if i < 0 || d.sent[i].AllocationID == "" {
		return
	}
	job := d.sent[i]
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	m := d.f.daemons[d.node]
	if m == nil {
		return // a session opened without connect
	}
	switch job.Kind {
	case core.NodeCommandAssign:
		var p wire.AssignPayload
		require.NoError(d.t, json.Unmarshal(job.Payload, &p))
		m.held[job.AllocationID] = p.End
	case core.NodeCommandUnassign:
		delete(m.held, job.AllocationID)
	}
}

func (d *daemon) observed() int64 {
	d.t.Helper()
	s, err := d.f.d.Q.NodeSessionGet(d.f.ctx, d.node)
	require.NoError(d.t, err)
	return s.ObservedGeneration
}

// A booking that starts later reaches its node's daemon at its start:
// nothing goes at booking (no job, no generation, no event), nor when it
// is extended or resynced before then; one that ends before its start is
// never sent and its end queues no unassign. Its activation queues the
// assign, with the window as it is then, and from then on its end goes to
// the daemon.
func TestAdvanceBookingReachesItsNodeAtItsStart(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	start, end := window(1, 3)
	later := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end})
	require.Equal(t, core.ReservationBooked, later.Reservation.State)
	ended := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end})
	require.Equal(t, core.ReservationBooked, ended.Reservation.State)
	nothingSent := func(why string) {
		t.Helper()
		require.Empty(t, f.assignmentJobs(t, "n1"), why)
		require.Zero(t, f.generation(t, "n1"), why+": the node's desired spec is unchanged")
		require.Zero(t, f.countEvents(t, core.EventNodeAssignmentQueued), why)
	}
	nothingSent("booked for later")

	_, err := f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: later.Reservation.ID,
		NewEnd: end.Add(time.Hour)})
	require.NoError(t, err)
	nothingSent("extended before its start")
	res, _, err := f.h.ResyncNode(f.ctx, "n1")
	require.NoError(t, err)
	require.Empty(t, res.Repushed)
	require.Empty(t, res.Unassigned)
	nothingSent("resynced before its start")
	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: ended.Reservation.ID})
	require.NoError(t, err)
	nothingSent("released before its start")

	f.activate(t, later.Reservation)
	alloc := f.allocationOf(t, later.Reservation.ID)
	jobs := f.assignmentJobs(t, "n1")
	require.Len(t, jobs, 1, "the activation assigns it")
	require.Equal(t, core.NodeCommandAssign, jobs[0].Kind)
	require.Equal(t, "assign:"+alloc, jobs[0].Key)
	require.Equal(t, int64(1), *jobs[0].Generation)
	require.Equal(t, int64(1), f.generation(t, "n1"))
	p := decodeAssign(t, jobs[0].Payload)
	require.True(t, end.Add(time.Hour).Equal(p.End), "the window as extended")
	require.Equal(t, 1, f.countEvents(t, core.EventNodeAssignmentQueued))

	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: later.Reservation.ID})
	require.NoError(t, err)
	jobs = f.assignmentJobs(t, "n1")
	require.Len(t, jobs, 2)
	require.Equal(t, core.NodeCommandUnassign, jobs[1].Kind)
	require.Equal(t, "unassign:"+alloc, jobs[1].Key)
	require.Equal(t, int64(2), f.generation(t, "n1"))
	f.requireInvariants(t)
}

// Booking a window that has begun queues one assign for the node in the
// booking's transaction, with the allocation's devices, scalars and window
// at the node's new generation; extending queues the wider window again.
func TestBookingQueuesAssign(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive, exclusive)
	require.Zero(t, f.generation(t, "n1"), "a node that never changed is at generation 0")
	start, end := window(0, 3) // begun: the allocation goes to the daemon at booking
	res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, VCPU: 8, MemoryMB: 4096, DiskGB: 100,
		Start: start, End: end})
	require.Equal(t, core.ReservationBooked, res.Reservation.State)
	alloc := f.allocationOf(t, res.Reservation.ID)

	jobs := f.assignmentJobs(t, "n1")
	require.Len(t, jobs, 1)
	j := jobs[0]
	require.Equal(t, core.NodeCommandAssign, j.Kind)
	require.Equal(t, "assign:"+alloc, j.Key)
	require.Equal(t, "queued", j.State)
	require.Equal(t, "acme", j.Tenant, "the reservation's tenant")
	require.Equal(t, alloc, *j.AllocationID)
	require.True(t, j.RetrySafe)
	require.Equal(t, int64(1), *j.Generation)
	require.Zero(t, j.MinGeneration)
	require.Equal(t, int64(1), f.generation(t, "n1"))

	p := decodeAssign(t, j.Payload)
	require.Equal(t, wire.AssignPayload{AllocationID: alloc, ReservationID: res.Reservation.ID,
		Devices: []wire.AssignedDevice{
			{ID: gpus[0], GPU: gpus[0], Kind: "gpu", Visible: gpus[0]},
			{ID: gpus[1], GPU: gpus[1], Kind: "gpu", Visible: gpus[1]}},
		VCPU: 8, MemoryMB: 4096, DiskGB: 100, Start: start.UTC(), End: end.UTC(), Generation: 1}, p)
	// Plumbing, not the tenant's command: a fleet-wide event.
	require.Zero(t, f.countEvents(t, core.EventNodeCommandQueued))
	var tenant *string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT tenant_id FROM outbox WHERE type = $1 AND subject = $2",
		core.EventNodeAssignmentQueued, core.NodeCommandSubject(j.ID)).Scan(&tenant))
	require.True(t, tenant == nil || *tenant == "", "no tenant: %v", tenant)

	// Extension: the same allocation with the wider window, at the next
	// generation, under a key of its own.
	_, err := f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: res.Reservation.ID,
		NewEnd: end.Add(time.Hour)})
	require.NoError(t, err)
	jobs = f.assignmentJobs(t, "n1")
	require.Len(t, jobs, 2)
	require.Equal(t, fmt.Sprintf("assign:%s:%d", alloc, end.Add(time.Hour).UnixMicro()), jobs[1].Key)
	wider := decodeAssign(t, jobs[1].Payload)
	require.True(t, end.Add(time.Hour).Equal(wider.End))
	require.Equal(t, int64(2), wider.Generation)
	f.requireInvariants(t)
}

// A mode change that reorders a MIG layout keeps each instance its node
// reported with an atom of the instance's profile: the ids (mig-0, mig-1)
// are reused, and an atom must not stay visible as an instance of another
// profile until the node's next inventory, or a tenant booking 3g.40gb
// gets the 1g.10gb instance, and, once the inventory pairs them again,
// two tenants one instance.
func TestGPUModeChangeKeepsMIGInstancesWithTheirProfile(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", core.GPULayout{Mode: core.GPUMIG, MIG: []string{"1g.10gb", "3g.40gb"}})
	// What the node's inventory recorded (recordMIGUUIDs): mig-0 is the
	// 1g.10gb instance, mig-1 the 3g.40gb one.
	_, err := f.d.Pool.Exec(f.ctx, `UPDATE devices SET mig_uuid = CASE id WHEN 'GPU-n1-0/mig-0' THEN 'MIG-small'
		ELSE 'MIG-big' END WHERE parent_id = 'GPU-n1-0'`)
	require.NoError(t, err)

	_, err = f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: "GPU-n1-0",
		Layout: core.GPULayout{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "1g.10gb"}}})
	require.NoError(t, err)
	big := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, MIGProfile: "3g.40gb"})
	small := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, MIGProfile: "1g.10gb"})
	visible := map[string]string{}
	for _, j := range f.assignmentJobs(t, "n1") {
		p := decodeAssign(t, j.Payload)
		visible[p.ReservationID] = p.Devices[0].Visible
	}
	require.Equal(t, map[string]string{big.Reservation.ID: "MIG-big", small.Reservation.ID: "MIG-small"}, visible)

	// A profile the old layout lacked has no instance recorded: its atom
	// is visible as itself until the node reports one.
	for actor, r := range map[core.Actor]commands.ReservationResult{tenantA: big, tenantB: small} {
		_, err = f.h.ReleaseReservation(f.ctx, actor, commands.ReleaseReservation{ReservationID: r.Reservation.ID})
		require.NoError(t, err)
	}
	_, err = f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: "GPU-n1-0",
		Layout: core.GPULayout{Mode: core.GPUMIG, MIG: []string{"2g.20gb", "3g.40gb"}}})
	require.NoError(t, err)
	var uuids []*string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT array_agg(mig_uuid ORDER BY id) FROM devices
		WHERE parent_id = 'GPU-n1-0' AND NOT retired`).Scan(&uuids))
	require.Len(t, uuids, 2)
	require.Nil(t, uuids[0], "2g.20gb: no instance of it was reported")
	require.NotNil(t, uuids[1])
	require.Equal(t, "MIG-big", *uuids[1])
	f.requireInvariants(t)
}

// A reservation placed by the pending retry is assigned too, and MIG atoms
// and slots carry their GPU, what CUDA sees and the slot's mode.
func TestAssignPayloadOfAtoms(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", core.GPULayout{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "3g.40gb"}},
		core.GPULayout{Mode: core.GPUMPS, Slots: 4})

	mig := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, MIGProfile: "3g.40gb"})
	p := decodeAssign(t, f.assignmentJobs(t, "n1")[0].Payload)
	require.Len(t, p.Devices, 1)
	atom := p.Devices[0]
	require.Equal(t, "mig", atom.Kind)
	require.Equal(t, "GPU-n1-0", atom.GPU)
	require.Equal(t, atom.ID, atom.Visible, "no inventory named the MIG instance yet: the atom's id")
	require.Equal(t, mig.Reservation.DeviceIDs, []string{atom.ID})

	// Once an inventory named it, CUDA sees the MIG instance's UUID.
	_, err := f.d.Pool.Exec(f.ctx, "UPDATE devices SET mig_uuid = 'MIG-1234' WHERE id = $1", atom.ID)
	require.NoError(t, err)
	_, err = f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: mig.Reservation.ID,
		NewEnd: mig.Reservation.End.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, "MIG-1234", decodeAssign(t, f.assignmentJobs(t, "n1")[1].Payload).Devices[0].Visible)

	// A slot, placed by the pending retry once the node is uncordoned.
	_, err = f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n1"})
	require.NoError(t, err)
	pending := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, SlotKind: core.GPUMPS})
	require.Equal(t, core.ReservationPending, pending.Reservation.State)
	_, err = f.h.UncordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n1"})
	require.NoError(t, err)
	require.NoError(t, f.h.RetryPending(f.ctx, pending.Reservation.ID))
	jobs := f.assignmentJobs(t, "n1")
	require.Len(t, jobs, 3)
	require.Equal(t, "assign:"+f.allocationOf(t, pending.Reservation.ID), jobs[2].Key)
	slot := decodeAssign(t, jobs[2].Payload).Devices[0]
	require.Equal(t, wire.AssignedDevice{ID: slot.ID, GPU: "GPU-n1-1", Kind: "slot", Visible: "GPU-n1-1", Mode: "mps"}, slot)
	// assign, assign, cordon, uncordon, assign.
	require.Equal(t, int64(5), decodeAssign(t, jobs[2].Payload).Generation)
	f.requireInvariants(t)
}

// Scheduling flags are part of the node's desired spec: each change bumps
// its generation, a no-op does not.
func TestSchedulingFlagsBumpGeneration(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive)
	steps := []func() error{
		func() error { _, err := f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n1"}); return err },
		func() error { _, err := f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n1"}); return err }, // no-op
		func() error {
			_, err := f.h.UncordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n1"})
			return err
		},
		func() error {
			_, err := f.h.TaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "gpu=reserved"})
			return err
		},
		func() error {
			_, err := f.h.UntaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "gpu=reserved"})
			return err
		},
		func() error { _, err := f.h.DrainNode(f.ctx, operator, commands.DrainNode{NodeID: "n1"}); return err },
		func() error { _, err := f.h.UndrainNode(f.ctx, operator, commands.DrainNode{NodeID: "n1"}); return err },
		func() error {
			_, err := f.h.QuarantineDevice(f.ctx, operator, commands.QuarantineDevice{DeviceID: gpus[0]})
			return err
		},
		func() error {
			_, err := f.h.UnquarantineDevice(f.ctx, operator, commands.QuarantineDevice{DeviceID: gpus[0]})
			return err
		},
	}
	want := []int64{1, 1, 2, 3, 4, 5, 6, 7, 8}
	for i, step := range steps {
		require.NoError(t, step())
		require.Equal(t, want[i], f.generation(t, "n1"), "after step %d", i)
	}
	_, err := f.d.Q.WorkQueueGet(f.ctx, db.WorkQueueGetParams{Kind: commands.KindNodeResync, Key: "n1"})
	require.NoError(t, err, "a flag change wakes the node's resync")

	// Nothing is open, so the node has applied every change: the resync
	// brings the session's observed generation there (as the reconcile of
	// the daemon's inventory would).
	d := f.connectUnreported(t, "n1", "j1", 0)
	require.Zero(t, d.observed())
	_, _, err = f.h.ResyncNode(f.ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, int64(8), d.observed())
}

// Release queues the unassign in its own transaction, bumping the
// generation, and moves the reservation's instances to stopping; the
// daemon's reports finish them.
func TestReleaseUnassignsAndStopsInstances(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	rsv := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	alloc := f.allocationOf(t, rsv.ID)
	f.activate(t, rsv)
	running, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID})
	require.NoError(t, err)
	queued, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID})
	require.NoError(t, err)

	// The assign goes first, then the instance-starts, in the order queued.
	rep := d.dispatch()
	require.Len(t, rep.Sent, 3)
	require.Equal(t, core.NodeCommandAssign, d.sent[0].Kind)
	require.Equal(t, alloc, d.sent[0].AllocationID)
	d.report(d.sent[0].ID, "succeeded", "", 1)
	require.Equal(t, int64(1), d.observed(), "the daemon's report, recorded at its epoch")
	d.report(d.sent[1].ID, "succeeded", "", 0) // the first instance runs
	require.Equal(t, core.ProvisionRunning, get(t, f, running.Instance.ID).State)

	released, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: rsv.ID})
	require.NoError(t, err)
	require.Equal(t, core.ReservationReleased, released.Reservation.State)
	require.Equal(t, int64(2), f.generation(t, "n1"))
	jobs := f.assignmentJobs(t, "n1")
	require.Len(t, jobs, 2)
	un := jobs[1]
	require.Equal(t, core.NodeCommandUnassign, un.Kind)
	require.Equal(t, "unassign:"+alloc, un.Key)
	require.Equal(t, int64(2), *un.Generation)
	require.True(t, un.RetrySafe)
	require.Equal(t, "acme", un.Tenant)
	var p wire.UnassignPayload
	require.NoError(t, json.Unmarshal(un.Payload, &p))
	require.Equal(t, wire.UnassignPayload{AllocationID: alloc, Reason: "reservation released", Generation: 2}, p)
	for _, id := range []string{running.Instance.ID, queued.Instance.ID} {
		i := get(t, f, id)
		require.Equal(t, core.ProvisionStopping, i.State, "stopping in the release's transaction")
	}

	// The daemon stops the running instance and reports it before it
	// acknowledges the unassign; the unassign's success stops the rest.
	d.dispatch()
	require.Equal(t, un.ID, d.sent[len(d.sent)-1].ID)
	stopped, err := f.h.NodeSessions().RecordInstanceStopped(f.ctx, commands.RecordInstanceStopped{NodeID: "n1", Epoch: d.epoch,
		InstanceID: running.Instance.ID, AllocationID: alloc, Reason: "allocation unassigned: reservation released"})
	require.NoError(t, err)
	require.Equal(t, core.ProvisionStopped, stopped.State)
	require.Equal(t, "allocation unassigned: reservation released", stopped.Reason)
	again, err := f.h.NodeSessions().RecordInstanceStopped(f.ctx, commands.RecordInstanceStopped{NodeID: "n1", Epoch: d.epoch,
		InstanceID: running.Instance.ID, Reason: "again"})
	require.NoError(t, err, "a repeated report changes nothing")
	require.Equal(t, stopped.Version, again.Version)
	d.report(un.ID, "succeeded", "", 2)
	left := get(t, f, queued.Instance.ID)
	require.Equal(t, core.ProvisionStopped, left.State)
	require.Equal(t, "allocation unassigned: reservation released", left.Reason,
		"the same words as the daemon's report of the other instance")
	require.Equal(t, int64(2), d.observed())
	f.requireInvariants(t)
}

// A daemon's stop report is fenced by its session epoch, and a node speaks
// only for its own instances.
func TestInstanceStoppedReportIsFenced(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	f.node(t, "n2", exclusive)
	old := f.connect(t, "n1", "j1", 0)
	cur := f.connect(t, "n1", "j1", 0)
	f.connect(t, "n2", "j2", 0)
	_, err := f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n2"})
	require.NoError(t, err)
	rsv := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	require.Equal(t, "n1", rsv.NodeID)
	f.activate(t, rsv)
	i, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID})
	require.NoError(t, err)

	_, err = f.h.NodeSessions().RecordInstanceStopped(f.ctx, commands.RecordInstanceStopped{NodeID: "n1", Epoch: old.epoch,
		InstanceID: i.Instance.ID, Reason: "x"})
	require.ErrorIs(t, err, commands.ErrSessionSuperseded)
	_, err = f.h.NodeSessions().RecordInstanceStopped(f.ctx, commands.RecordInstanceStopped{NodeID: "n2", Epoch: 1,
		InstanceID: i.Instance.ID, Reason: "x"})
	require.Equal(t, core.CodeNotFound, core.CodeOf(err))
	require.Equal(t, core.ProvisionRequested, get(t, f, i.Instance.ID).State)

	// The watchdog stopped it: requested → stopping → stopped, one event each.
	got, err := f.h.NodeSessions().RecordInstanceStopped(f.ctx, commands.RecordInstanceStopped{NodeID: "n1", Epoch: cur.epoch,
		InstanceID: i.Instance.ID, Reason: "not assigned"})
	require.NoError(t, err)
	require.Equal(t, core.ProvisionStopped, got.State)
	require.Equal(t, 1, f.countEvents(t, core.EventInstanceStopping))
	require.Equal(t, 1, f.countEvents(t, core.EventInstanceStopped))
}

// A refused assign fails its reservation in one transaction: quota
// refunded, bookings freed, instances failed, one reservation.failed, and
// no unassign (the daemon never held it). A transient failure fails
// nothing: the resync sends the assign again.
func TestRefusedAssignFailsReservation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	d := f.connect(t, "n1", "j1", 0)
	before := quotaUsed(t, f, "acme", "gpu")
	start, end := window(1, 3)
	rsv := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 4, Start: start, End: end}).Reservation
	alloc := f.allocationOf(t, rsv.ID)
	f.activate(t, rsv) // the window starts in an hour: the clock moves there
	i, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID})
	require.NoError(t, err)
	require.Equal(t, before+1, quotaUsed(t, f, "acme", "gpu"))

	d.dispatch()
	assign := d.sent[0]
	require.Equal(t, core.NodeCommandAssign, assign.Kind)
	reason := wire.RefusedPrefix + "device " + rsv.DeviceIDs[0] + " is held by allocation alc_planted for [2030-01-01T00:00:00Z, ∞)"
	d.report(assign.ID, "failed", reason, 0)

	r, err := f.h.GetReservation(f.ctx, tenantA, rsv.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationFailed, r.State)
	require.Len(t, r.Conditions, 1)
	require.Equal(t, core.Condition{Type: core.ConditionAssignmentFailed, Status: true, Reason: "Refused",
		Message: "node n1 did not take the assignment: " + reason}, r.Conditions[0])
	require.Empty(t, r.DeviceIDs, "its allocation is released")
	require.Equal(t, before, quotaUsed(t, f, "acme", "gpu"), "quota refunded")
	var bookings int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM device_bookings WHERE allocation_id = $1",
		alloc).Scan(&bookings))
	require.Zero(t, bookings, "a booking that had not begun is gone")
	require.Equal(t, 1, f.countEvents(t, core.EventReservationFailed))
	require.Len(t, f.assignmentJobs(t, "n1"), 1, "no unassign: the daemon never held it")
	failed := get(t, f, i.Instance.ID)
	require.Equal(t, core.ProvisionFailed, failed.State)
	require.Contains(t, failed.Reason, reason)
	d.report(assign.ID, "failed", reason, 0) // a repeat changes nothing
	require.Equal(t, 1, f.countEvents(t, core.EventReservationFailed))
	f.requireInvariants(t)

	// The devices are free again.
	again := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, Start: start, End: end})
	require.Equal(t, core.ReservationBooked, again.Reservation.State)

	// A daemon that could not write its journal refused nothing: the
	// reservation stays, and the resync assigns it again.
	d.dispatch()
	second := d.sent[len(d.sent)-1]
	require.Equal(t, core.NodeCommandAssign, second.Kind)
	d.report(second.ID, "failed", "journal: no space left on device", 0)
	r, err = f.h.GetReservation(f.ctx, tenantA, again.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, r.State)
	res, _, err := f.h.ResyncNode(f.ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, []string{second.AllocationID}, res.Repushed)
	f.requireInvariants(t)
}

// An assign of the next tenant's devices waits until the unassign of the
// previous holder concluded (the daemon holds the devices until it has
// stopped the old workloads); the next tenant's instance waits with its
// assign.
func TestAssignWaitsForEarlierUnassign(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	first := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	d.dispatch()
	d.report(d.sent[0].ID, "succeeded", "", 1)
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: first.ID})
	require.NoError(t, err)
	d.dispatch()
	unassign := d.sent[len(d.sent)-1]
	require.Equal(t, core.NodeCommandUnassign, unassign.Kind)

	next := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1}).Reservation
	require.Equal(t, first.DeviceIDs, next.DeviceIDs)
	f.activate(t, next)
	i, err := f.h.CreateInstance(f.ctx, tenantB, commands.CreateInstance{ReservationID: next.ID})
	require.NoError(t, err)
	rep := d.dispatch()
	require.Empty(t, rep.Sent)
	require.Len(t, rep.Waiting, 2, "the assign waits for the unassign, the instance-start for its assign")

	d.report(unassign.ID, "succeeded", "", 2)
	_, err = f.d.Q.WorkQueueGet(f.ctx, db.WorkQueueGetParams{Kind: commands.KindNodeJobDispatch, Key: "n1"})
	require.NoError(t, err, "a concluded assignment job wakes the node's dispatch")
	rep = d.dispatch()
	require.Len(t, rep.Sent, 2)
	n := len(d.sent)
	require.Equal(t, core.NodeCommandAssign, d.sent[n-2].Kind)
	require.Equal(t, core.NodeCommandInstanceStart, d.sent[n-1].Kind)
	require.Equal(t, core.ProvisionRequested, get(t, f, i.Instance.ID).State)
}

// Only an assign that shares a GPU with an open unassign waits for it: a
// reservation without GPUs, or one of another GPU, is assigned at once
// while the unassign runs (a preempted workload's long grace holds back
// its preemptor only, not the node).
func TestAssignOfOtherGPUsDoesNotWaitForUnassign(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	d := f.connect(t, "n1", "j1", 0)
	first := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	d.dispatch()
	d.report(d.sent[0].ID, "succeeded", "", 1)
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: first.ID})
	require.NoError(t, err)
	d.dispatch()
	unassign := d.sent[len(d.sent)-1]
	require.Equal(t, core.NodeCommandUnassign, unassign.Kind)

	// Both GPUs free: one reservation takes both, so it shares the
	// unassigned one; another has no GPU at all.
	both := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 2}).Reservation
	cpu := f.reserve(t, tenantB, commands.CreateReservation{VCPU: 4}).Reservation
	rep := d.dispatch()
	require.Len(t, rep.Sent, 1, "the assign without GPUs goes at once")
	require.Equal(t, f.allocationOf(t, cpu.ID), d.sent[len(d.sent)-1].AllocationID)
	require.Len(t, rep.Waiting, 1, "the one that shares the GPU waits")

	d.report(unassign.ID, "succeeded", "", 2)
	rep = d.dispatch()
	require.Len(t, rep.Sent, 1)
	require.Equal(t, f.allocationOf(t, both.ID), d.sent[len(d.sent)-1].AllocationID)
}

// Another slot of a time-sliced GPU does not wait for an unassign of the
// slot beside it: the daemon never refuses two slots of one GPU to two
// allocations, so holding it only delayed a tenant who shares nothing with
// the one being stopped. A probe saw a tenant's freshly booked slot wait,
// billed and unable to start an instance, through a preempted neighbour's
// grace (up to a day); the neighbour's own slot still waits.
func TestAssignOfAnotherSlotDoesNotWaitForUnassign(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", core.GPULayout{Mode: core.GPUTimeSlice, Slots: 2})
	d := f.connect(t, "n1", "j1", 0)
	first := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, SlotKind: core.GPUTimeSlice}).Reservation
	d.dispatch()
	d.report(d.sent[0].ID, "succeeded", "", 1)
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: first.ID})
	require.NoError(t, err)
	d.dispatch()
	unassign := d.sent[len(d.sent)-1]
	require.Equal(t, core.NodeCommandUnassign, unassign.Kind) // still running: the workloads' grace

	// Both slots are free in the database: one reservation takes the
	// released slot, the next one the other slot.
	same := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, SlotKind: core.GPUTimeSlice}).Reservation
	other := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, SlotKind: core.GPUTimeSlice}).Reservation
	if !slices.Equal(same.DeviceIDs, first.DeviceIDs) {
		same, other = other, same
	}
	require.Equal(t, first.DeviceIDs, same.DeviceIDs)
	require.NotEqual(t, first.DeviceIDs, other.DeviceIDs)
	rep := d.dispatch()
	require.Equal(t, []string{f.allocationOf(t, other.ID)}, sentAllocations(d, rep), "the other slot goes at once")
	require.Len(t, rep.Waiting, 1, "the released slot waits for its unassign")

	d.report(unassign.ID, "succeeded", "", d.observed()+1)
	rep = d.dispatch()
	require.Equal(t, []string{f.allocationOf(t, same.ID)}, sentAllocations(d, rep))
}

// A daemon that comes back holding an allocation the control plane does
// not know (its database was restored to before that booking) is told to
// unassign it, and an assign queued before that unassign, of a booking
// made while the daemon was away, waits for it: sent first, the daemon
// would refuse it, the unknown allocation holding the GPU, and fail a
// reservation whose GPU is free once the unassign is done.
func TestAssignQueuedBeforeAnUnknownAllocationsUnassignWaitsForIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	f.connect(t, "n1", "j1", 0)
	booked := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1}).Reservation
	alloc := f.allocationOf(t, booked.ID)

	back := f.connectUnreported(t, "n1", "j1", 0)
	res, err := f.h.NodeSessions().ReconcileNodeAssignments(f.ctx, "n1", back.epoch,
		[]commands.ReportedAssignment{{AllocationID: "alc_from_after_the_backup", End: booked.End}})
	require.NoError(t, err)
	require.Equal(t, []string{"alc_from_after_the_backup"}, res.Unassigned)
	jobs := f.assignmentJobs(t, "n1")
	require.Len(t, jobs, 2)
	require.Equal(t, core.NodeCommandAssign, jobs[0].Kind, "the booking's assign was queued first")

	rep := back.dispatch()
	require.Len(t, rep.Sent, 1)
	require.Equal(t, core.NodeCommandUnassign, back.sent[0].Kind)
	require.Empty(t, back.sent[0].AllocationID, "the unknown allocation's unassign: a fleet job")
	require.Len(t, rep.Waiting, 1, "the assign waits for it")

	back.report(back.sent[0].ID, "succeeded", "", 0)
	rep = back.dispatch()
	require.Len(t, rep.Sent, 1)
	require.Equal(t, core.NodeCommandAssign, back.sent[1].Kind)
	require.Equal(t, alloc, back.sent[1].AllocationID)
	f.requireInvariants(t)
}

// A session's dispatch sends no assign before the daemon's inventory of
// that session is reconciled: until then nobody knows whether the daemon
// holds an allocation the database does not (restored to an earlier
// point), whose unassign would hold the assign back. The database refuses
// to mark one sent, whatever Go decides. Other jobs go meanwhile; the
// reconcile wakes dispatch; and a new session starts unreconciled again.
func TestAssignWaitsForTheSessionsInventory(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	f.connect(t, "n1", "j1", 0)
	booked := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1}).Reservation
	alloc := f.allocationOf(t, booked.ID)

	// The daemon is back, and its inventory is not reconciled yet: the
	// booking's assign, queued while it was away, waits.
	back := f.connectUnreported(t, "n1", "j1", 0)
	rep := back.dispatch()
	require.Empty(t, rep.Sent, "no assign before the inventory is reconciled")
	require.Len(t, rep.Waiting, 1)
	jobs := f.assignmentJobs(t, "n1")
	require.Len(t, jobs, 1)
	assign, err := f.d.Q.NodeCommandGet(f.ctx, jobs[0].ID)
	require.NoError(t, err)
	rows, err := f.d.Q.NodeCommandMarkSent(f.ctx, db.NodeCommandMarkSentParams{State: "sent", DispatchedEpoch: back.epoch,
		JournalID: "j1", Bump: 1, ID: assign.ID, Version: assign.Version})
	require.NoError(t, err)
	require.Zero(t, rows, "the database refuses to mark it sent")

	// The reconcile finds an allocation from after the backup: its unassign
	// goes, the assign still waits for it; and the reconcile woke dispatch.
	_, err = f.d.Pool.Exec(f.ctx, "DELETE FROM work_queue WHERE kind = $1 AND key = 'n1'", commands.KindNodeJobDispatch)
	require.NoError(t, err)
	res, err := f.h.NodeSessions().ReconcileNodeAssignments(f.ctx, "n1", back.epoch,
		[]commands.ReportedAssignment{{AllocationID: "alc_from_after_the_backup", End: booked.End}})
	require.NoError(t, err)
	require.Equal(t, []string{"alc_from_after_the_backup"}, res.Unassigned)
	_, err = f.d.Q.WorkQueueGet(f.ctx, dbWork(commands.KindNodeJobDispatch, "n1"))
	require.NoError(t, err, "the reconcile wakes the node's dispatch")
	rep = back.dispatch()
	require.Len(t, rep.Sent, 1)
	require.Equal(t, core.NodeCommandUnassign, back.sent[0].Kind)
	require.Len(t, rep.Waiting, 1, "the assign waits for the unassign")
	back.report(back.sent[0].ID, "succeeded", "", 0)
	rep = back.dispatch()
	require.Len(t, rep.Sent, 1)
	require.Equal(t, core.NodeCommandAssign, back.sent[1].Kind)
	require.Equal(t, alloc, back.sent[1].AllocationID)

	// A new session starts unreconciled: the reconcile of the one before
	// does not count for it. Its reconcile, with nothing unknown, lets the
	// assigns go, the one still in flight (sent again) and a new one.
	again := f.connectUnreported(t, "n1", "j1", 0)
	second := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1}).Reservation
	rep = again.dispatch()
	require.Empty(t, rep.Sent)
	require.Empty(t, rep.Resent, "nor is one in flight sent again")
	require.Len(t, rep.Waiting, 2)
	_, err = f.h.NodeSessions().ReconcileNodeAssignments(f.ctx, "n1", again.epoch, nil)
	require.NoError(t, err)
	rep = again.dispatch()
	require.Len(t, rep.Resent, 1)
	require.Len(t, rep.Sent, 1)
	require.Equal(t, []string{alloc, f.allocationOf(t, second.ID)},
		[]string{again.sent[0].AllocationID, again.sent[1].AllocationID})
	f.requireInvariants(t)
}

// After a reconnect the daemon's report is reconciled both ways: a live
// allocation it does not hold is assigned again, one it holds that ended
// (or that the control plane never had) is unassigned.
func TestReconcileNodeAssignments(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	d := f.connect(t, "n1", "j1", 0)
	live := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	ended := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	liveAlloc, endedAlloc := f.allocationOf(t, live.ID), f.allocationOf(t, ended.ID)
	d.dispatch()
	d.report(d.sent[0].ID, "succeeded", "", 1)
	d.dispatch()
	d.report(d.sent[1].ID, "succeeded", "", 2)
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: ended.ID})
	require.NoError(t, err)
	d.dispatch()
	d.report(d.sent[2].ID, "succeeded", "", 3)
	require.Equal(t, int64(3), d.observed())

	// The daemon comes back from a journal that lost the live assignment
	// and the unassign, and that holds one nobody knows.
	back := f.connectUnreported(t, "n1", "j2", 1)
	_, err = f.h.NodeSessions().ReconcileNodeAssignments(f.ctx, "n1", d.epoch, nil)
	require.ErrorIs(t, err, commands.ErrSessionSuperseded, "a superseded session's report changes nothing")
	held := []commands.ReportedAssignment{{AllocationID: endedAlloc, End: ended.End}, {AllocationID: "alc_planted",
		End: ended.End}}
	res, err := f.h.NodeSessions().ReconcileNodeAssignments(f.ctx, "n1", back.epoch, held)
	require.NoError(t, err)
	require.Equal(t, []string{liveAlloc}, res.Repushed)
	require.Equal(t, slices.Sorted(slices.Values([]string{"alc_planted", endedAlloc})), res.Unassigned)

	jobs := f.assignmentJobs(t, "n1")
	require.Len(t, jobs, 6)
	byKey := map[string]job{}
	for _, j := range jobs {
		byKey[j.Key] = j
	}
	repush := byKey[fmt.Sprintf("assign:%s:r%d", liveAlloc, back.epoch)]
	require.Equal(t, core.NodeCommandAssign, repush.Kind)
	require.Equal(t, liveAlloc, decodeAssign(t, repush.Payload).AllocationID)
	require.Equal(t, "queued", byKey[fmt.Sprintf("unassign:%s:r%d", endedAlloc, back.epoch)].State,
		"unassign:<id> did its work already: the key of this epoch")
	planted := byKey["unassign:alc_planted"]
	require.Equal(t, "", planted.Tenant, "an allocation nobody knows: a fleet job")
	require.Nil(t, planted.AllocationID)
	require.Equal(t, int64(6), f.generation(t, "n1"))

	// Reported again (a second inventory): the jobs on their way are not
	// queued twice.
	res, err = f.h.NodeSessions().ReconcileNodeAssignments(f.ctx, "n1", back.epoch, held)
	require.NoError(t, err)
	require.Empty(t, res.Repushed)
	require.Empty(t, res.Unassigned)

	// The unassigns go out; the re-push waits for the unassign of the
	// allocation nobody knows (it may hold the same GPU). The observed
	// generation follows the oldest job still open.
	rep := back.dispatch()
	require.Len(t, rep.Sent, 2)
	require.Len(t, rep.Waiting, 1)
	for i := range rep.Sent {
		require.Equal(t, core.NodeCommandUnassign, back.sent[i].Kind)
		back.report(back.sent[i].ID, "succeeded", "", 0)
		require.Equal(t, int64(3), back.observed(), "the re-push, generation 4, is still open")
	}
	rep = back.dispatch()
	require.Len(t, rep.Sent, 1)
	require.Equal(t, core.NodeCommandAssign, back.sent[2].Kind)
	back.report(back.sent[2].ID, "succeeded", "", 0)
	require.Equal(t, int64(6), back.observed())
	f.requireInvariants(t)
}

// The resync queues what the jobs' outcomes say is missing, and runs every
// NodeResyncEvery (simulated time) from the session open on.
func TestResyncNode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	*f.h = *commands.New(f.d.Pool, commands.Config{NodeResyncEvery: 2 * time.Minute})
	f.node(t, "n1", exclusive, exclusive)
	d := f.connect(t, "n1", "j1", 0)
	it, err := f.d.Q.WorkQueueGet(f.ctx, db.WorkQueueGetParams{Kind: commands.KindNodeResync, Key: "n1"})
	require.NoError(t, err, "the session open schedules the node's resync")
	require.True(t, f.d.Now(t).Add(2*time.Minute).Equal(it.NotBefore), "%s", it.NotBefore)

	kept := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	gone := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	keptAlloc, goneAlloc := f.allocationOf(t, kept.ID), f.allocationOf(t, gone.ID)
	res, _, err := f.h.ResyncNode(f.ctx, "n1")
	require.NoError(t, err)
	require.Empty(t, res.Repushed, "assigns on their way are not missing")
	d.dispatch()
	d.report(d.sent[0].ID, "failed", "journal: input/output error", 0)
	d.dispatch()
	d.report(d.sent[1].ID, "succeeded", "", 2)
	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: gone.ID})
	require.NoError(t, err)
	d.dispatch()
	d.report(d.sent[2].ID, "failed", "journal: input/output error", 0)

	f.d.AdvanceSimClock(t, 2*time.Minute)
	shard, err := lease.Acquire(f.ctx, f.d.Q, workqueue.ShardLeaseName(workqueue.ShardOf("n1")), "worker", lease.TTL)
	require.NoError(t, err)
	err = f.h.Reconcilers().NodeResync(f.ctx, workqueue.Item{Kind: commands.KindNodeResync, Key: "n1", Lease: shard})
	require.Equal(t, workqueue.Again(2*time.Minute), err, "and again after NodeResyncEvery")
	jobs := f.assignmentJobs(t, "n1")
	require.Len(t, jobs, 5)
	require.Equal(t, core.NodeCommandAssign, jobs[3].Kind)
	require.Equal(t, keptAlloc, *jobs[3].AllocationID)
	require.Equal(t, fmt.Sprintf("assign:%s:g%d", keptAlloc, *jobs[3].Generation), jobs[3].Key)
	require.Equal(t, core.NodeCommandUnassign, jobs[4].Kind)
	require.Equal(t, goneAlloc, *jobs[4].AllocationID)
	require.Equal(t, fmt.Sprintf("unassign:%s:g%d", goneAlloc, *jobs[4].Generation), jobs[4].Key)

	// Nothing is missing once they went out.
	rep := d.dispatch()
	require.Len(t, rep.Sent, 2)
	for _, j := range d.sent[len(d.sent)-2:] {
		d.report(j.ID, "succeeded", "", 0)
	}
	res, _, err = f.h.ResyncNode(f.ctx, "n1")
	require.NoError(t, err)
	require.Empty(t, res.Repushed)
	require.Empty(t, res.Unassigned)
	require.Equal(t, f.generation(t, "n1"), d.observed())
}

// A node whose assignment job has been open longer than the resync period
// is drifting.
func TestNodeAssignmentDrift(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	f.node(t, "n2", exclusive)
	_, err := f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n2"})
	require.NoError(t, err)
	f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	drift := func() []db.NodeAssignmentDriftRow {
		rows, err := f.d.Q.NodeAssignmentDrift(f.ctx, (5 * time.Minute).Seconds())
		require.NoError(t, err)
		return rows
	}
	require.Empty(t, drift())
	f.d.AdvanceSimClock(t, 5*time.Minute+time.Second)
	rows := drift()
	require.Len(t, rows, 1)
	require.Equal(t, "n1", rows[0].NodeID)
	require.Equal(t, int64(1), rows[0].Generation)
	require.Zero(t, rows[0].ObservedGeneration)
	require.False(t, rows[0].Connected)
}

func quotaUsed(t *testing.T, f *fixture, tenant, resource string) int64 {
	t.Helper()
	q, err := f.d.Q.QuotaUsageGet(f.ctx, db.QuotaUsageGetParams{TenantID: tenant, Resource: resource})
	require.NoError(t, err)
	return q.Used
}

// A daemon's word on the generation it applied is believed up to the
// node's generation: a hello claiming more (a lie, or a journal from
// another database) records the node's generation, and the API never
// shows a node as further along than was asked of it.
func TestObservedGenerationNeverPassesTheGeneration(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}) // an assign: generation 1
	var generation int64
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT generation FROM node_desired WHERE node_id = 'n1'").Scan(&generation))
	require.Positive(t, generation)
	observed := func() (g int64) {
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT observed_generation FROM node_sessions WHERE node_id = 'n1'").Scan(&g))
		return g
	}
	f.connect(t, "n1", "j1", 1<<62)
	require.Equal(t, generation, observed())
	f.connect(t, "n1", "j1", -5)
	require.Zero(t, observed())
}

// A daemon that reports thousands of allocations it should not hold gets
// them unassigned a slice at a time, MaxUnassignsPerReport per report, and
// an id no allocation can have (too long, or not printable) is skipped:
// one report cannot queue unbounded work, nor fail.
func TestReconcileBoundsTheUnassignsOfOneReport(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	var held []commands.ReportedAssignment
	end := pgtest.SimEpoch.Add(time.Hour)
	for i := range commands.MaxUnassignsPerReport + 50 {
		held = append(held, commands.ReportedAssignment{AllocationID: fmt.Sprintf("alc_fake%05d", i), End: end})
	}
	held = append(held, commands.ReportedAssignment{AllocationID: "alc_" + strings.Repeat("x", 200), End: end},
		commands.ReportedAssignment{AllocationID: "alc_\x00", End: end}, // PostgreSQL's text refuses a NUL
		commands.ReportedAssignment{AllocationID: "alc_\x1b[2J", End: end})
	res, err := f.h.NodeSessions().ReconcileNodeAssignments(f.ctx, "n1", d.epoch, held)
	require.NoError(t, err, "nor does one fail the report, which would hold the session's assigns back")
	require.Len(t, res.Unassigned, commands.MaxUnassignsPerReport)
	require.Equal(t, 53, res.Skipped)
	require.Len(t, f.assignmentJobs(t, "n1"), commands.MaxUnassignsPerReport)
}

// At a window's boundary the next reservation's activation may run before
// the previous one's expiry: its assign is then queued before the
// unassign exists. It must still wait until the daemon has given the GPU
// up (a probe saw both tenants' containers on one GPU for the stop grace):
// held while the previous allocation is held, sent once its unassign is
// acknowledged. A slot of the same GPU that the previous allocation does
// not hold is not held back.
func TestAssignWaitsForTheAllocationBeforeIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", core.GPULayout{Mode: core.GPUTimeSlice, Slots: 2})
	d := f.connect(t, "n1", "j1", 0)
	start, mid := window(0, 1)
	_, end := window(1, 2)
	before := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, SlotKind: core.GPUTimeSlice, Start: start, End: mid}).Reservation
	d.dispatch()
	d.report(d.sent[0].ID, "succeeded", "", 1)
	// The next window takes both slots: one is the slot before had (back
	// to back), the other the GPU's other slot.
	after := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, SlotKind: core.GPUTimeSlice, Start: mid, End: end}).Reservation
	other := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, SlotKind: core.GPUTimeSlice, Start: mid, End: end}).Reservation
	if !slices.Equal(after.DeviceIDs, before.DeviceIDs) {
		after, other = other, after
	}
	require.Equal(t, before.DeviceIDs, after.DeviceIDs, "the same slot, back to back")
	require.NotEqual(t, before.DeviceIDs, other.DeviceIDs, "the GPU's other slot")

	f.activate(t, after) // the clock reaches the boundary; the expiry has not run yet
	f.activate(t, other)
	rep := d.dispatch()
	require.Equal(t, []string{f.allocationOf(t, other.ID)}, sentAllocations(d, rep), "the other slot goes at once")
	require.Len(t, rep.Waiting, 1, "the assign of the same slot waits for the allocation the daemon still holds")

	require.NoError(t, commandstest.Expire(f.ctx, f.h, before.ID))
	rep = d.dispatch()
	unassign := d.sent[len(d.sent)-1]
	require.Equal(t, core.NodeCommandUnassign, unassign.Kind)
	require.Len(t, rep.Waiting, 1, "still waiting while the unassign runs (the workloads' stop grace)")

	d.report(unassign.ID, "succeeded", "", d.observed()+1)
	rep = d.dispatch()
	require.Equal(t, []string{f.allocationOf(t, after.ID)}, sentAllocations(d, rep), "sent once the daemon gave the slot up")
}

// sentAllocations are the allocations of the jobs rep sent.
func sentAllocations(d *daemon, rep commands.DispatchReport) []string {
	var out []string
	for _, j := range rep.ToSend {
		out = append(out, j.AllocationID)
	}
	return out
}

// A booking on a GPU its node's daemon does not report is kept, as the
// missing GPU's bookings are: its assign waits while the GPU is recorded
// missing and goes once the daemon reports it again; an assign the daemon
// rejected for that GPU (sent before the record knew) fails nothing, and
// the resync sends it again.
func TestBookingOnAMissingGPUWaitsForIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive, exclusive)
	d := f.connect(t, "n1", "j1", 0)
	inventory := func(ids ...string) {
		t.Helper()
		var inv commands.NodeInventory
		for _, id := range ids {
			inv.GPUs = append(inv.GPUs, commands.ReportedGPU{UUID: id, Model: "a100", MemoryMB: 81920})
		}
		_, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, inv)
		require.NoError(t, err)
	}
	start, end := window(1, 3)
	rsv := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end}).Reservation
	gpu := rsv.DeviceIDs[0]
	other := gpus[0]
	if other == gpu {
		other = gpus[1]
	}
	inventory(other) // the daemon comes back without the booked GPU
	f.activate(t, rsv)
	rep := d.dispatch()
	require.Empty(t, rep.Sent, "the assign waits for its GPU")
	r, err := f.h.GetReservation(f.ctx, tenantA, rsv.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationActive, r.State, "the booking is kept")

	inventory(gpus...) // reported again
	d.dispatch()
	require.NotEmpty(t, d.sent)
	assign := d.sent[len(d.sent)-1]
	require.Equal(t, core.NodeCommandAssign, assign.Kind, "sent once the GPU is back")

	// Sent before the record knew the GPU had gone: the daemon rejects it.
	d.report(assign.ID, "failed", "invalid assignment: device "+gpu+": GPU "+gpu+" "+wire.NotOnThisNode, 0)
	r, err = f.h.GetReservation(f.ctx, tenantA, rsv.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationActive, r.State, "a GPU not on the machine now fails nothing")
	require.Zero(t, f.countEvents(t, core.EventReservationFailed))
	res, _, err := f.h.ResyncNode(f.ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, []string{assign.AllocationID}, res.Repushed, "the resync sends it again")
	f.requireInvariants(t)
}

// An instance the daemon's inventory no longer lists ended without a
// report that arrived: once it has been running longer than the grace
// (an inventory is a snapshot, perhaps taken before it started), it
// fails as lost; a stopping one is stopped. Listed ones, and reports of a
// superseded session, change nothing.
func TestInventoryEndsInstancesTheDaemonNoLongerRuns(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	rsv := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	f.activate(t, rsv)
	var ids []string
	for range 2 {
		created, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID})
		require.NoError(t, err)
		ids = append(ids, created.Instance.ID)
	}
	d.dispatch()
	for _, c := range d.sent {
		d.report(c.ID, "succeeded", "", 1)
	}
	for _, id := range ids {
		require.Equal(t, core.ProvisionRunning, get(t, f, id).State)
	}
	reconcile := func(running ...string) []string {
		t.Helper()
		lost, err := f.h.NodeSessions().ReconcileNodeInstances(f.ctx, "n1", d.epoch, running)
		require.NoError(t, err)
		return lost
	}
	require.Empty(t, reconcile(), "within the grace: the inventory may predate the start")

	f.d.AdvanceSimClock(t, commands.InstanceReportGrace)
	require.Empty(t, reconcile(ids...), "both run")
	_, err := f.h.DeleteInstance(f.ctx, tenantA, ids[1])
	require.NoError(t, err)
	f.d.AdvanceSimClock(t, commands.InstanceReportGrace)
	_, err = f.h.NodeSessions().ReconcileNodeInstances(f.ctx, "n1", d.epoch-1, nil)
	require.ErrorIs(t, err, commands.ErrSessionSuperseded)
	require.Equal(t, ids, reconcile(), "neither is listed any more")
	running, stopping := get(t, f, ids[0]), get(t, f, ids[1])
	require.Equal(t, core.ProvisionFailed, running.State, "nobody asked it to stop")
	require.Contains(t, running.Reason, "lost: its node's daemon no longer runs it")
	require.Equal(t, core.ProvisionStopped, stopping.State, "it was asked to stop")
	require.Empty(t, reconcile(), "once")
	f.requireInvariants(t)
}

// The inventory a daemon sends when it reconnects was taken after its new
// session opened: an instance it no longer lists that last changed before
// then ends at once, without the grace (a daemon stopped gracefully a few
// seconds after starting it, and started again).
func TestReconnectInventoryEndsYoungLostInstancesAtOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	rsv := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	f.activate(t, rsv)
	created, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID})
	require.NoError(t, err)
	d.dispatch()
	for _, c := range d.sent {
		d.report(c.ID, "succeeded", "", 1)
	}
	require.Equal(t, core.ProvisionRunning, get(t, f, created.Instance.ID).State)

	f.d.AdvanceSimClock(t, 6*time.Second) // well within the grace
	again := f.connect(t, "n1", "j1", 1)
	lost, err := f.h.NodeSessions().ReconcileNodeInstances(f.ctx, "n1", again.epoch, nil)
	require.NoError(t, err)
	require.Equal(t, []string{created.Instance.ID}, lost)
	require.Equal(t, core.ProvisionFailed, get(t, f, created.Instance.ID).State)
}
