package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bettercompute/compute/wire"
)

// What a daemon finds of allocations it does not hold. Its state directory
// holds its journal, its record of running instances and runc's state; an
// allocation's container, cgroup, directory (with its /work file system),
// network namespace and user id are elsewhere on the machine. A state
// directory that is wiped or lost (an operator's `rm -rf`, a disk
// replaced) while they exist leaves them without an owner: the next daemon
// comes back with a new journal that holds nothing, and nothing would ever
// unassign them. Measured on a node (docs/concepts/nodes.md, "A wiped state
// directory"): the workloads ran on in their cgroup, invisible to runc, the
// control plane ended their instances `lost`, and the allocation's
// directory, its mounted 1 GiB /work image and loop device, and its entry
// in the machine's uid table stayed for as long as the machine ran.
//
// So the daemon takes back what it can prove is its own, and nothing else:
//
//   - At start, before its first session, it stops the container of every
//     allocation its journal does not hold (containers: known to its runc,
//     or a cgroup /compute/<node>/<allocation> with processes whose
//     directory is in its workload root). No instance of it can be
//     adopted (none is recorded, or the journal would hold the
//     allocation), so whatever runs there is no tenant's instance any
//     more: it goes, with its network namespace, before an assign of the
//     same allocation could start a second container in the same cgroup.
//   - At every resync it releases (forget: directory, /work, user id) each
//     allocation it owns but does not hold once the window recorded in the
//     allocation's directory (allocationRecordFile) has ended, or at once
//     when none is recorded. An allocation the control plane still books
//     on the node is assigned again after the reconnect, within its window:
//     its directory, and the tenant's files in /work, are then taken over
//     as they are.
//
// Owned means: its user id is in the machine's table under this daemon's
// state directory (uidOwner; every container is made after its id is
// taken, and the id is released last), or its directory's record names
// this node and this state directory. Another daemon's allocations, in
// the same workload root or under the same node id, are neither.

// allocationRecordFile, in an allocation's directory, says whose it is
// and until when it is booked.
const allocationRecordFile = "allocation.json"

// allocationRecord is the content of allocationRecordFile.
type allocationRecord struct {
	NodeID       string    `json:"nodeId"`
	StateDir     string    `json:"stateDir"`
	AllocationID string    `json:"allocationId"`
	End          time.Time `json:"end"`
}

// recordAllocation writes a's record into its directory, if it has one
// (made at its first workload, pod): rewritten at every assign, so that an
// extended window is the one recorded.
func (s *sandbox) recordAllocation(a *wire.AssignPayload) error {
	if s.mode != IsolationContainer || a == nil || !validDomain.MatchString(a.AllocationID) {
		return nil
	}
	dir := s.domainDir(a.AllocationID)
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	b, err := json.Marshal(allocationRecord{NodeID: s.nodeID, StateDir: s.state, AllocationID: a.AllocationID, End: a.End})
	if err != nil {
		return err
	}
	return writeFileDurable(filepath.Join(dir, allocationRecordFile), b, 0o600)
}

// allocationRecordOf reads the record in the allocation's directory; false
// when there is none, or it is not this daemon's.
func (s *sandbox) allocationRecordOf(domain string) (allocationRecord, bool) {
	b, err := os.ReadFile(filepath.Join(s.domainDir(domain), allocationRecordFile))
	if err != nil {
		return allocationRecord{}, false
	}
	var r allocationRecord
	if json.Unmarshal(b, &r) != nil || r.NodeID != s.nodeID || r.StateDir != s.state || r.AllocationID != domain {
		return allocationRecord{}, false
	}
	return r, true
}

// ownedAllocations are the allocations this daemon can prove are its own
// (see above), held or not.
func (s *sandbox) ownedAllocations() ([]string, error) {
	if s.mode != IsolationContainer || s.uids == nil {
		return nil, nil
	}
	owned, err := s.uids.owners(uidOwner(s.state, ""))
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.root)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() && validDomain.MatchString(e.Name()) && !slices.Contains(owned, e.Name()) {
			if _, ok := s.allocationRecordOf(e.Name()); ok {
				owned = append(owned, e.Name())
			}
		}
	}
	return slices.DeleteFunc(owned, func(id string) bool { return id == fleetDomain || !validDomain.MatchString(id) }), nil
}

// stopStrays stops, at start, the containers of allocations the journal
// does not hold (see above). It returns those it stopped.
func (d *daemon) stopStrays(ctx context.Context) []string {
	var stopped []string
	for _, id := range d.sandbox.containers(ctx) {
		if id == fleetDomain {
			continue
		}
		if _, held := d.journal.assignment(id); held {
			continue
		}
		if err := d.sandbox.stop(ctx, id); err != nil {
			d.log.Error("could not stop the container of an allocation this daemon does not hold", "allocation", id, "err", err)
			continue
		}
		d.log.Warn("stopped the container of an allocation this daemon does not hold (its state directory was "+
			"wiped or lost while it ran)", "allocation", id)
		stopped = append(stopped, id)
	}
	return stopped
}

// releaseOrphans releases every allocation this daemon owns but does not
// hold, whose recorded window has ended by now (or that has none
// recorded). It returns those it released.
func (d *daemon) releaseOrphans(ctx context.Context, now time.Time) []string {
	owned, err := d.sandbox.ownedAllocations()
	if err != nil {
		d.log.Warn("list the allocations this daemon owns", "err", err)
	}
	var released []string
	for _, id := range owned {
		if _, held := d.journal.assignment(id); held || d.instances.isClosing(id) {
			continue
		}
		if r, ok := d.sandbox.allocationRecordOf(id); ok && (r.End.IsZero() || now.Before(r.End)) {
			continue // the control plane may assign it again: its /work waits for it
		}
		if err := d.releaseOrphan(ctx, id); err != nil {
			d.log.Error("could not release an allocation this daemon does not hold", "allocation", id, "err", err)
			continue
		}
		d.log.Warn("released an allocation this daemon does not hold (its state directory was wiped or lost)",
			"allocation", id)
		released = append(released, id)
	}
	return released
}

// releaseOrphan forgets allocation id as an unassign does, with its
// workloads' starts refused meanwhile; an assign of it that came in the
// meantime keeps it.
func (d *daemon) releaseOrphan(ctx context.Context, id string) error {
	d.instances.beginClosing(id)
	defer d.instances.endClosing(id)
	if _, held := d.journal.assignment(id); held {
		return nil
	}
	return d.sandbox.forget(ctx, id)
}

// owners are the security domains of the table's entries whose owner
// starts with prefix (uidOwner(stateDir, "")): one daemon's.
func (t *uidTable) owners(prefix string) ([]string, error) {
	var out []string
	err := t.locked(func(e uidEntries) (bool, error) {
		for owner := range e {
			if domain, ok := strings.CutPrefix(owner, prefix); ok && domain != "" {
				out = append(out, domain)
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("uid table: %w", err)
	}
	slices.Sort(out)
	return out, nil
}
