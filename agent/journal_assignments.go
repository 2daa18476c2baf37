package agent

// The assignments a journal holds: what the daemon was assigned, the
// defense-in-depth refusal of an overlapping one, and the generation the
// daemon has applied. journal.go keeps the file; this file, what it means.

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/bettercompute/compute/wire"
)

// refusal is why the journal refused an assignment: one of its devices is
// held by another allocation for an overlapping window.
type refusal struct {
	device, holder string
	start, end     time.Time
}

// reason is what the daemon reports to the control plane: it starts with
// wire.RefusedPrefix and names the assignment's own device only. The
// holder is another allocation, perhaps another tenant's, and the reason
// reaches the refused reservation's tenant (its AssignmentFailed
// condition and reservation.failed), so its id and window stay in the
// daemon's log.
func (r *refusal) reason() string {
	return fmt.Sprintf("%sdevice %s is held by another allocation on this node for an overlapping window",
		wire.RefusedPrefix, r.device)
}

// assign records an assignment unless one of its devices is held by
// another allocation for an overlapping window: defense in depth behind
// the database's exclusion constraint. It returns the refusal, or nil.
// Delivering an allocation again is a success; a changed assignment of it
// (an extension) replaces the one held, if it conflicts with no other.
func (j *journal) assign(a wire.AssignPayload) (*refusal, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	others := make([]string, 0, len(j.assigned))
	for id := range j.assigned {
		others = append(others, id)
	}
	slices.Sort(others) // the same refusal every time
	for _, other := range others {
		if other == a.AllocationID {
			continue
		}
		held := j.assigned[other]
		if !windowsOverlap(a.Start, a.End, held.Start, held.End) {
			continue
		}
		for _, d := range a.Devices {
			for _, h := range held.Devices {
				if devicesConflict(d, h) {
					return &refusal{device: d.ID, holder: other, start: held.Start, end: held.End}, nil
				}
			}
		}
	}
	if cur, ok := j.assigned[a.AllocationID]; ok && sameAssignment(cur, a) {
		return nil, nil // a redelivery: already recorded
	}
	return nil, j.appendLocked(journalRecord{JournalEntry: wire.JournalEntry{Kind: entryAssign,
		AllocationID: a.AllocationID, DeviceIDs: deviceIDs(a.Devices)}, Assign: &a})
}

// unassign records that the allocation is no longer held (whether it was
// or not: the generation moves on either way).
func (j *journal) unassign(p wire.UnassignPayload) error {
	return j.append(journalRecord{JournalEntry: wire.JournalEntry{Kind: entryUnassign, AllocationID: p.AllocationID},
		Generation: p.Generation, Reason: p.Reason})
}

// assignment returns the assignment held for an allocation.
func (j *journal) assignment(allocationID string) (wire.AssignPayload, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	a, ok := j.assigned[allocationID]
	return a, ok
}

// assignments returns every assignment held, by allocation id.
func (j *journal) assignments() []wire.AssignPayload {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]wire.AssignPayload, 0, len(j.assigned))
	for _, a := range j.assigned {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b wire.AssignPayload) int { return cmp.Compare(a.AllocationID, b.AllocationID) })
	return out
}

// observedGeneration is the highest generation of an accepted assign or
// unassign.
func (j *journal) observedGeneration() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.generation
}

// windowsOverlap reports whether [s1, e1) and [s2, e2) share an instant;
// a zero bound is unbounded (assignments journaled without a window).
func windowsOverlap(s1, e1, s2, e2 time.Time) bool {
	return (e2.IsZero() || s1.Before(e2)) && (e1.IsZero() || s2.Before(e1))
}

// devicesConflict reports whether two atoms cannot be held by two
// allocations at once: the same atom, a whole GPU and anything on it, atoms
// of one GPU shared two ways (a MIG instance and a slot, or a time-slice and
// an MPS slot: the GPU is in one mode at a time), or two MIG atoms visible
// as the same MIG instance. The last is what the
// container gets (the instance's CDI device), and the control plane's
// pairing of atoms with instances (by profile and order, from the
// inventory) can move under a live booking, so two atoms may name one
// instance; the atom ids alone would let two tenants share it.
func devicesConflict(a, b wire.AssignedDevice) bool {
	if a.ID == b.ID {
		return true
	}
	if a.Kind == "mig" && b.Kind == "mig" && a.Visible == b.Visible {
		return true
	}
	return a.GPU != "" && a.GPU == b.GPU && (a.Kind == "gpu" || a.Kind != b.Kind || a.Mode != b.Mode)
}

func windowString(start, end time.Time) string {
	f := func(t time.Time, open string) string {
		if t.IsZero() {
			return open
		}
		return t.UTC().Format(time.RFC3339)
	}
	return "[" + f(start, "-∞") + ", " + f(end, "∞") + ")"
}

func sameAssignment(a, b wire.AssignPayload) bool {
	return a.AllocationID == b.AllocationID && a.ReservationID == b.ReservationID && slices.Equal(a.Devices, b.Devices) &&
		a.VCPU == b.VCPU && a.MemoryMB == b.MemoryMB && a.DiskGB == b.DiskGB && a.Start.Equal(b.Start) &&
		a.End.Equal(b.End) && a.Generation == b.Generation
}

func deviceIDs(ds []wire.AssignedDevice) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}
