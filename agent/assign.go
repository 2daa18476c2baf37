package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bettercompute/compute/wire"
)

// DefaultResyncEvery is how often the watchdog looks for workloads that
// outlived their assignment (it also looks at every (re)connect).
const DefaultResyncEvery = time.Minute

// assign carries out an "assign" node job: it validates the assignment
// against this node's inventory, refuses it (State failed, Reason starting
// "refused: ") when it overlaps, in devices and window, an allocation this
// daemon already holds, and otherwise journals it before acknowledging.
// Delivering an allocation again is a success.
func (d *daemon) assign(res wire.Message, m wire.Message) wire.Message {
	var a wire.AssignPayload
	if err := decodePayload(m.Payload, &a); err != nil {
		res.State, res.Reason = outcomeFailed, "bad assign payload: "+err.Error()
		return res
	}
	if why := d.validateAssign(m, a); why != "" {
		res.State, res.Reason = outcomeFailed, "invalid assignment: "+why
		d.log.Warn("assignment invalid", "allocation", a.AllocationID, "reason", why)
		return res
	}
	refused, err := d.journal.assign(a)
	switch {
	case err != nil:
		res.State, res.Reason = outcomeFailed, "journal: "+err.Error()
	case refused != nil:
		res.State, res.Reason = outcomeFailed, refused.reason()
		d.log.Warn("assignment refused", "allocation", a.AllocationID, "device", refused.device,
			"held_by", refused.holder, "held_for", windowString(refused.start, refused.end))
	default:
		select {
		case d.assigned <- struct{}{}:
		default:
		}
		// An extended window is recorded in the allocation's directory
		// too (orphans.go); the journal, already written, is what counts.
		if err := d.sandbox.recordAllocation(&a); err != nil {
			d.log.Warn("record the allocation's window in its directory", "allocation", a.AllocationID, "err", err)
		}
		// Its container's keeper ends it no sooner than the new end.
		if err := d.sandbox.moveKeeperDeadline(&a); err != nil {
			d.log.Warn("move the allocation's keeper deadline", "allocation", a.AllocationID, "err", err)
		}
		res.Output = fmt.Sprintf("assigned %s: %d devices (CUDA_VISIBLE_DEVICES=%s), %d vCPU, %d MiB, %s",
			a.AllocationID, len(a.Devices), visibleDevices(&a), a.VCPU, a.MemoryMB, windowString(a.Start, a.End))
	}
	return res
}

// validateAssign says what is wrong with an assignment, or "".
func (d *daemon) validateAssign(m wire.Message, a wire.AssignPayload) string {
	switch {
	case a.AllocationID == "":
		return "no allocationId"
	case !validDomain.MatchString(a.AllocationID) || a.AllocationID == fleetDomain:
		return fmt.Sprintf("allocation id %q cannot name a workload domain", a.AllocationID)
	case m.AllocationID != "" && m.AllocationID != a.AllocationID:
		return fmt.Sprintf("the job is for allocation %s but its payload assigns %s", m.AllocationID, a.AllocationID)
	case a.Start.IsZero() || a.End.IsZero():
		return "start and end are required"
	case !a.End.After(a.Start):
		return fmt.Sprintf("end %s is not after start %s", a.End.Format(time.RFC3339), a.Start.Format(time.RFC3339))
	case a.VCPU < 0 || a.MemoryMB < 0 || a.DiskGB < 0:
		return "negative vcpu, memoryMb or diskGb"
	case len(a.Devices) == 0 && a.VCPU == 0 && a.MemoryMB == 0 && a.DiskGB == 0:
		return "it assigns nothing: no devices, vcpu, memory or disk"
	}
	gpus := map[string]wire.InventoryGPU{}
	for _, g := range d.machineGPUs() {
		gpus[g.UUID] = g
	}
	seen := map[string]bool{}
	for i, dev := range a.Devices {
		if dev.ID == "" || dev.GPU == "" || dev.Kind == "" || dev.Visible == "" {
			return fmt.Sprintf("device %d: id, gpu, kind and visible are required", i)
		}
		if seen[dev.ID] {
			return fmt.Sprintf("device %s appears twice", dev.ID)
		}
		seen[dev.ID] = true
		if strings.ContainsAny(dev.Visible, ", \t\n") {
			return fmt.Sprintf("device %s: visible %q is not one device", dev.ID, dev.Visible)
		}
		g, ok := gpus[dev.GPU]
		if !ok {
			return fmt.Sprintf("device %s: GPU %s %s", dev.ID, dev.GPU, wire.NotOnThisNode)
		}
		switch dev.Kind {
		case "gpu":
			if dev.Visible != dev.GPU {
				return fmt.Sprintf("device %s: a whole GPU is visible as itself, not %s", dev.ID, dev.Visible)
			}
		case "slot":
			if dev.Mode != "time-slice" && dev.Mode != "mps" {
				return fmt.Sprintf("device %s: slot mode %q is neither time-slice nor mps", dev.ID, dev.Mode)
			}
			if dev.Visible != dev.GPU {
				return fmt.Sprintf("device %s: a slot is visible as its GPU %s, not %s", dev.ID, dev.GPU, dev.Visible)
			}
		case "mig":
			// A fake inventory has no MIG instances to check against.
			if len(g.MIG) > 0 && !slices.ContainsFunc(g.MIG, func(x wire.InventoryMIG) bool { return x.UUID == dev.Visible }) {
				return fmt.Sprintf("device %s: MIG instance %s is not one of GPU %s", dev.ID, dev.Visible, dev.GPU)
			}
		default:
			return fmt.Sprintf("device %s: unknown kind %q", dev.ID, dev.Kind)
		}
	}
	return ""
}

// unassign carries out an "unassign" node job: it stops every workload of
// the allocation (see stopGroup) and reports each stopped instance, drops
// the allocation's sandbox (directory, cgroup, user id), journals the
// unassign, and only then succeeds. Unassigning an allocation this daemon
// does not hold succeeds.
func (d *daemon) unassign(res wire.Message, m wire.Message) wire.Message {
	var p wire.UnassignPayload
	if len(m.Payload) == 0 {
		p.AllocationID = m.AllocationID
	} else if err := decodePayload(m.Payload, &p); err != nil {
		res.State, res.Reason = outcomeFailed, "bad unassign payload: "+err.Error()
		return res
	}
	if p.AllocationID == "" {
		p.AllocationID = m.AllocationID
	}
	switch {
	case p.AllocationID == "":
		res.State, res.Reason = outcomeFailed, "invalid unassign: no allocationId"
		return res
	case m.AllocationID != "" && m.AllocationID != p.AllocationID:
		res.State, res.Reason = outcomeFailed, fmt.Sprintf("invalid unassign: the job is for allocation %s but its "+
			"payload unassigns %s", m.AllocationID, p.AllocationID)
		return res
	}
	d.instances.beginClosing(p.AllocationID)
	defer d.instances.endClosing(p.AllocationID)
	why := p.StopReason()
	// Every process of the allocation gets SIGTERM (the ones its
	// instances and jobs left behind too), then its grace period: the
	// one the unassign names (a preempted reservation's class), else the
	// daemon's.
	d.sandbox.terminate(context.Background(), p.AllocationID)
	stopped := d.instances.stopWhere(p.Grace(d.cfg.StopGrace), true, func(_, alloc string) string {
		if alloc == p.AllocationID {
			return why
		}
		return ""
	})
	d.reportStopped(stopped)
	// Then the container goes with whatever is left in it, its directory
	// and its user id: the unassign is acknowledged only once nothing of
	// the allocation remains on the node.
	if err := d.sandbox.forget(context.Background(), p.AllocationID); err != nil {
		d.log.Error("release allocation", "allocation", p.AllocationID, "err", err)
		res.State, res.Reason = outcomeFailed, "release allocation: "+err.Error()
		return res
	}
	if err := d.journal.unassign(p); err != nil {
		res.State, res.Reason = outcomeFailed, "journal: "+err.Error()
		return res
	}
	res.Output = fmt.Sprintf("unassigned %s", p.AllocationID)
	if len(stopped) > 0 {
		ids := make([]string, len(stopped))
		for i, s := range stopped {
			ids[i] = s.InstanceID
		}
		res.Output += "; stopped instances " + strings.Join(ids, ", ")
	}
	return res
}

// resync is the watchdog: nothing outlives its reservation. It stops (see
// stopGroup) every workload of an allocation that is not assigned here,
// or whose assignment's end has passed by the control plane's clock (as the
// daemon reckons it, windowNow), and reports
// each stopped instance. It runs at every (re)connect and every
// Config.ResyncEvery.
func (d *daemon) resync() []stoppedInstance {
	now := d.windowNow()
	stopped := d.instances.stopWhere(d.cfg.StopGrace, false, func(_, alloc string) string {
		if alloc == "" {
			return "" // an operator's workload
		}
		a, ok := d.journal.assignment(alloc)
		if !ok {
			return notAssigned(alloc)
		}
		return outsideWindow(a, now)
	})
	for _, s := range stopped {
		d.log.Warn("watchdog stopped an instance", "instance", s.InstanceID, "allocation", s.AllocationID, "reason", s.Reason)
	}
	d.reportStopped(stopped)
	// Containers outside their window go whole, with what their instances
	// left running in them; directories and user ids wait for the unassign.
	for _, id := range d.sandbox.containers(context.Background()) {
		if id == fleetDomain {
			continue
		}
		a, ok := d.journal.assignment(id)
		if ok && outsideWindow(a, now) == "" {
			continue
		}
		if d.instances.isClosing(id) {
			continue // its unassign is removing it
		}
		if err := d.sandbox.stop(context.Background(), id); err != nil {
			d.log.Error("watchdog could not stop a container", "allocation", id, "err", err)
		} else {
			d.log.Warn("watchdog stopped a container outside its assignment", "allocation", id)
		}
	}
	// The keepers' deadlines follow the latest measurement of the control
	// plane's clock (a resync runs at every session open).
	for _, a := range d.journal.assignments() {
		if err := d.sandbox.moveKeeperDeadline(&a); err != nil {
			d.log.Warn("move the allocation's keeper deadline", "allocation", a.AllocationID, "err", err)
		}
	}
	// What a lost state directory left of allocations no longer held.
	d.releaseOrphans(context.Background(), now)
	return stopped
}

// watchdog runs resync at the next end of an assignment's window, and at
// least every Config.ResyncEvery, until ctx ends.
func (d *daemon) watchdog(ctx context.Context) {
	for {
		t := time.NewTimer(d.watchdogWait(d.windowNow()))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-d.assigned:
			t.Stop() // a new window: its end may be the next
			continue
		case <-t.C:
			d.resync()
		}
	}
}

// watchdogMinWait keeps the watchdog from spinning on an end it has just
// passed (the daemon's clock and the timer's may differ by a little).
const watchdogMinWait = 100 * time.Millisecond

// watchdogWait is how long the watchdog sleeps from now: until the next
// end of an assignment's window, so that a workload stops at its end even
// when the control plane cannot reach the node to unassign it, and at
// most ResyncEvery.
func (d *daemon) watchdogWait(now time.Time) time.Duration {
	wait := d.cfg.ResyncEvery
	for _, a := range d.journal.assignments() {
		if !a.End.IsZero() && a.End.After(now) {
			wait = min(wait, a.End.Sub(now))
		}
	}
	return max(wait, watchdogMinWait)
}

// reportStopped sends one TypeInstanceStopped per stopped instance to the
// session open now, or to the next one (report).
func (d *daemon) reportStopped(stopped []stoppedInstance) {
	for _, s := range stopped {
		b, err := json.Marshal(wire.InstanceStopped{InstanceID: s.InstanceID, AllocationID: s.AllocationID,
			Reason: s.Reason, PID: s.PID, At: d.now().UTC()})
		if err != nil {
			continue
		}
		d.report(wire.Message{Type: wire.TypeInstanceStopped, AllocationID: s.AllocationID, Payload: b})
	}
}

// reportExited reports an instance whose process ended on its own, with
// its exit status (nil: not known): the control plane marks it succeeded
// or failed. One its container's keeper ended is a stop at its window's
// end, and reported so (keeper_ended.go).
func (d *daemon) reportExited(proc *instanceProcess, code *int32, reason string) {
	if why := d.keeperEnded(proc, code, reason); why != "" {
		d.log.Warn("the container's keeper stopped an instance at its window's end while no daemon ran",
			"instance", proc.id, "allocation", proc.allocationID, "reason", why)
		d.reportStopped([]stoppedInstance{{InstanceID: proc.id, AllocationID: proc.allocationID, PID: proc.pid,
			Reason: why}})
		return
	}
	status := "unknown"
	if code != nil {
		status = fmt.Sprint(*code)
	}
	d.log.Info("instance exited", "instance", proc.id, "allocation", proc.allocationID, "exitCode", status, "reason", reason)
	b, err := json.Marshal(wire.InstanceStopped{InstanceID: proc.id, AllocationID: proc.allocationID, Reason: reason,
		PID: proc.pid, At: d.now().UTC(), Exited: true, ExitCode: code})
	if err != nil {
		return
	}
	d.report(wire.Message{Type: wire.TypeInstanceStopped, AllocationID: proc.allocationID, Payload: b})
}

// nodeState is what the inventory message carries.
func (d *daemon) nodeState() wire.NodeState {
	st := wire.NodeState{Assignments: d.journal.assignments(), Instances: d.instances.running(),
		ObservedGeneration: d.journal.observedGeneration(), GPUs: d.machineGPUs(), DiskLimit: d.sandbox.diskLimit,
		Scalars: d.cfg.Scalars}
	if err := d.sandbox.check(); err != nil {
		st.WorkloadsRefused = err.Error()
	}
	return st
}

// decodePayload decodes a job's payload; fields this daemon does not know
// are ignored, so that the control plane can add some.
func decodePayload(b json.RawMessage, v any) error {
	if len(b) == 0 {
		return fmt.Errorf("no payload")
	}
	return json.Unmarshal(b, v)
}
