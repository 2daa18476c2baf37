package commands

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/wire"
)

// holdBehindHeldDevices holds back (in held) the queued assign of every
// allocation that shares a device with another allocation the node's
// daemon may still hold: one whose assign it was sent or acknowledged and
// whose unassign it has not acknowledged.
//
// heldAllocations alone orders an assign after the unassigns queued before
// it. At a window's boundary that is not enough: the next reservation's
// activation and the previous one's expiry are separate work items due at
// the same instant, and when the activation runs first its assign is
// queued before the expiry's unassign exists. The daemon, whose own check
// compares windows, would take the new allocation while the old one's
// workloads still run through their stop grace: two tenants on one GPU.
// Held here, the assign goes once the old allocation's unassign is
// acknowledged, whenever that was queued.
//
// Devices are compared as atoms: two slots of one time-sliced GPU are
// different devices and may be held by two allocations at once. A whole
// GPU and any atom of it are the same device (a mode change may follow a
// booking's end while the daemon still holds that booking's GPU).
func holdBehindHeldDevices(ctx context.Context, q *db.Queries, nodeID string, open []db.NodeCommand, held map[string]bool) error {
	queued := false
	for _, c := range open {
		queued = queued || (c.Kind == core.NodeCommandAssign && core.State(c.State) == core.CommandQueued)
	}
	if !queued {
		return nil
	}
	rows, err := q.NodeAssignmentJobs(ctx, nodeID)
	if err != nil {
		return pg.Translate(err, "assignment jobs")
	}
	jobs := map[string][]db.NodeAssignmentJobsRow{}
	for _, r := range rows {
		jobs[r.AllocationID] = append(jobs[r.AllocationID], r)
	}
	var ids []string
	for id, js := range jobs {
		if id != "" && daemonMayStillHold(js) {
			ids = append(ids, id)
		}
	}
	var holding []allocationDevices
	if len(ids) > 0 {
		devices, err := q.AllocationDevicesOf(ctx, ids)
		if err != nil {
			return pg.Translate(err, "devices of assigned allocations")
		}
		for _, d := range devices {
			holding = append(holding, allocationDevices{id: d.ID, devices: d.DeviceIds})
		}
	}
	// In the order queued: an assign that goes now is held by the daemon
	// for the assigns after it.
	for _, c := range open {
		if c.Kind != core.NodeCommandAssign || core.State(c.State) != core.CommandQueued || c.AllocationID == nil ||
			held[*c.AllocationID] {
			continue
		}
		a := allocationDevices{id: *c.AllocationID, devices: assignDevices(c.Payload)}
		if a.sharesWithAny(holding) {
			held[a.id] = true
			continue
		}
		holding = append(holding, a)
	}
	return nil
}

// allocationDevices is an allocation and the devices it books.
type allocationDevices struct {
	id      string
	devices []string
}

// sharesWithAny reports whether another allocation of others shares a
// device with a.
func (a allocationDevices) sharesWithAny(others []allocationDevices) bool {
	for _, o := range others {
		if o.id != a.id && devicesOverlap(a.devices, o.devices) {
			return true
		}
	}
	return false
}

// daemonMayStillHold reports whether the daemon may still hold an
// allocation, by its assignment jobs oldest first: from an assign it was
// sent or acknowledged until an unassign it acknowledged. Unlike mayHold,
// an unassign still open counts as held: the daemon gives the devices up
// only when it has stopped the allocation's workloads. A failed unassign
// changes nothing, so the next one (reconcile queues it) is waited for. A
// queued assign is not held yet: holdBehindHeldDevices counts it, in queue
// order, once it is about to be sent.
func daemonMayStillHold(jobs []db.NodeAssignmentJobsRow) bool {
	held := false
	for _, j := range jobs {
		switch state := core.State(j.State); {
		case j.Kind == core.NodeCommandAssign &&
			(state == core.CommandSent || state == core.CommandRunning || state == core.CommandSucceeded):
			held = true
		case j.Kind == core.NodeCommandUnassign && state == core.CommandSucceeded:
			held = false
		}
	}
	return held
}

// assignDevices are the device ids an assign payload names; nil for one
// that does not parse, which then waits for nothing here (heldAllocations
// holds it behind every open unassign already).
func assignDevices(payload []byte) []string {
	var a wire.AssignPayload
	if json.Unmarshal(payload, &a) != nil {
		return nil
	}
	out := make([]string, 0, len(a.Devices))
	for _, d := range a.Devices {
		out = append(out, d.ID)
	}
	return out
}

// devicesOverlap reports whether two device lists share an atom, or a
// whole GPU and an atom of it.
func devicesOverlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y || (!strings.Contains(x, "/") && gpuOf(y) == x) || (!strings.Contains(y, "/") && gpuOf(x) == y) {
				return true
			}
		}
	}
	return false
}

// holdWhileGPUsMissing holds back (in held) the queued assign of every
// allocation with a device on a GPU recorded missing: the node's daemon
// does not report it, so it would reject the assign, and a missing GPU's
// bookings are kept. The gateway's poll sends the assign once the GPU is
// reported again (healthy); until then the allocation's jobs wait with it.
func holdWhileGPUsMissing(ctx context.Context, q *db.Queries, nodeID string, open []db.NodeCommand, held map[string]bool) error {
	queued := false
	for _, c := range open {
		queued = queued || (c.Kind == core.NodeCommandAssign && core.State(c.State) == core.CommandQueued && c.AllocationID != nil &&
			!held[*c.AllocationID])
	}
	if !queued {
		return nil
	}
	devices, err := q.DeviceListByNode(ctx, nodeID)
	if err != nil {
		return pg.Translate(err, "devices of node "+nodeID)
	}
	missing := map[string]bool{}
	for _, d := range devices {
		if d.Kind == string(core.AtomGPU) && d.Health == HealthMissing {
			missing[d.ID] = true
		}
	}
	if len(missing) == 0 {
		return nil
	}
	for _, c := range open {
		if c.Kind != core.NodeCommandAssign || core.State(c.State) != core.CommandQueued || c.AllocationID == nil {
			continue
		}
		for _, d := range assignDevices(c.Payload) {
			if missing[gpuOf(d)] {
				held[*c.AllocationID] = true
				break
			}
		}
	}
	return nil
}
