package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/wire"
)

// KindNodeJobDispatch wakes the dispatch of a node's jobs; its key is the
// node id. RunNodeCommand enqueues it, and so does every session open: a
// new session is when queued jobs can first go out, when a daemon reports
// a new observed generation, and when a daemon that lost its journal must
// have its in-flight jobs failed or re-sent; and so does the reconcile of
// the session's inventory, after which its assigns may go. The gateway
// handles it (the kind's name predates "node job" and is kept for items
// already queued).
const KindNodeJobDispatch = "node.command.dispatch"

// DispatchReport says what one dispatch did, and what the gateway must now
// send.
type DispatchReport struct {
	Sent    []string // queued jobs sent (queued → sent)
	Resent  []string // in-flight jobs sent again at this epoch
	Failed  []string // in-flight, not retry-safe, and the daemon lost its journal
	Waiting []string // queued until the daemon reports min_generation
	// Cancelled are queued instance-starts whose instance stopped before
	// they could be sent (cancelStaleStart): never sent.
	Cancelled []string
	// ToSend are the jobs of Sent and Resent, in the order queued, as the
	// gateway puts them on the wire after the commit.
	ToSend []NodeJobToSend
}

// NodeJobToSend is a node job as dispatch hands it to the gateway, which
// puts it on the wire. AllocationID names the allocation whose security
// domain (its user and its devices) the daemon runs the job in; it is
// empty for an operator's fleet job. SessionEpoch is the epoch the job was
// marked sent at: the message carries it, and the daemon refuses a job
// stamped with any epoch but its session's.
type NodeJobToSend struct {
	ID           string
	Kind         string
	Payload      json.RawMessage
	AllocationID string
	SessionEpoch int64
}

// lostMemoryReason is why an in-flight job that is not retry-safe fails
// when its daemon comes back with another journal.
const lostMemoryReason = "daemon lost its memory: it came back with a new journal while the command was in flight"

// DispatchNodeJobs marks the node's open jobs sent to the daemon on its
// session at epoch, in one transaction that
//
//   - is fenced by the gateway's lease, and locks the session row at epoch
//     FOR SHARE (LockForDispatch): a zombie gateway, whose session was
//     superseded, gets ErrSessionSuperseded and marks nothing, and a
//     supersede waits until this transaction ends;
//   - sends no assign, queued or in flight, before the session's inventory
//     was reconciled (see heldAllocations); the database refuses to mark
//     one (NodeCommandMarkSent), so this is the database's rule, not
//     Go's ordering;
//   - marks a queued job only when min_generation <= the generation the
//     node has applied: every assign and unassign of a generation up to
//     min_generation concluded (NodeAppliedGeneration; see assignments.go),
//     and holds back an assign while an unassign queued before it, of an
//     allocation that shares a GPU with it, is open, with every job of its
//     allocation (heldAllocations). Otherwise it
//     stays queued and waits: every session open, every concluded
//     assignment job and every reconcile wakes dispatch again, so nothing
//     needs to poll;
//   - cancels a queued instance-start whose instance is no longer
//     requested (cancelStaleStart) instead of sending it;
//   - fails an in-flight job sent to another journal unless it is
//     retry-safe, and marks again retry-safe ones and those sent at an
//     older epoch of the same journal (the daemon answers a repeat from its
//     journal instead of running it twice).
//
// It commits and returns what to send (DispatchReport.ToSend); it sends
// nothing itself. Nothing external happens inside a transaction: a slow
// daemon would keep it open, and an open transaction holds
// pg_snapshot_xmin, and with it every outbox reader, back. The zombie
// protection the lock gave the send is carried by the epoch instead: each
// job goes out stamped with the epoch it was marked at, and the daemon
// refuses any epoch but its current session's. Delivery stays at least
// once: a job marked sent whose send then fails is sent again at the
// daemon's next session (a new epoch), which the gateway forces by ending
// the session whose write failed.
func (s NodeSessions) DispatchNodeJobs(ctx context.Context, gw lease.Lease, nodeID string, epoch int64) (DispatchReport, error) {
	h := s.h
	var rep DispatchReport
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		rep = DispatchReport{}
		if err := gw.Fence(ctx, tx); err != nil {
			return err
		}
		sess, err := lockSessionForDispatch(ctx, tx, nodeID, epoch)
		if err != nil {
			return err
		}
		q := db.New(tx)
		// What the node has applied, as its assignment jobs' outcomes
		// tell (the daemon's acknowledgements), not as its journal claims.
		// Read before the jobs, so that one queued meanwhile only makes it
		// stricter.
		generation, err := q.NodeAppliedGeneration(ctx, nodeID)
		if err != nil {
			return pg.Translate(err, "node generation")
		}
		open, err := q.NodeCommandListOpenForUpdate(ctx, nodeID)
		if err != nil {
			return pg.Translate(err, "node commands")
		}
		unassigning, err := unassignedDevices(ctx, q, open)
		if err != nil {
			return err
		}
		held := heldAllocations(open, unassigning, sess.InventoryReconciled)
		if err := holdWhileGPUsMissing(ctx, q, nodeID, open, held); err != nil {
			return err
		}
		if err := holdBehindHeldDevices(ctx, q, nodeID, open, held); err != nil {
			return err
		}
		for _, c := range open {
			if err := dispatchOne(ctx, q, c, sess, generation, held, &rep); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return DispatchReport{}, fmt.Errorf("dispatch commands of node %s at epoch %d: %w", nodeID, epoch, err)
	}
	return rep, nil
}

// heldAllocations are the allocations whose queued assign must wait: the
// session's inventory is not reconciled yet (reconciled false), or an
// unassign queued before it, still open, is of an allocation that shares a
// GPU with it. The daemon carries out an unassign in the background (it
// stops the allocation's workloads first, holding its devices meanwhile,
// for the grace the unassign names) and assigns in the order they arrive,
// so an assign of those devices sent before the unassign concluded would
// be refused; an assign of other devices is not, and goes at once (a
// preemption's long grace holds back only its preemptor). unassigning
// has the devices of each open unassign's allocation (unassignedDevices).
// Devices are compared by GPU (a MIG atom's instance may move under it),
// except that another slot of a time-sliced or MPS GPU is another device:
// the daemon takes two slots of one GPU for two allocations at once, and
// holding it held a tenant who shares nothing with the allocation being
// stopped, through that allocation's grace (sharesGPU).
//
// An open unassign of an allocation the control plane does not know holds
// back every assign of the node, queued before it or after it: the daemon
// holds that allocation on devices nobody here can name, and the control
// plane booked them to others since. That is the node of a database
// restored to an earlier point: a booking made after the restore, while
// the daemon was away, is queued before the reconcile of its reconnect
// finds what the daemon still holds from after the backup, and sent first
// it would be refused, failing a reservation whose GPU is free as soon as
// the unassign is done. Every queued job of a held allocation waits with
// its assign: the daemon runs nothing of an allocation it does not hold,
// and an unassign must not overtake it.
//
// Until the inventory the daemon sends after its hello is reconciled
// (ReconcileNodeAssignments, which records it in the session row at its
// epoch), nobody knows whether it holds such an allocation: the unassign
// that would hold the assigns back is not queued yet. So a session sends
// no assign before that reconcile, however it was queued, and the
// reconcile wakes dispatch when it commits. The daemon sends its inventory
// right after its hello (before it reads any job), so the wait is the
// reconcile's transaction. Every other job goes meanwhile: an unassign
// only ever frees devices (the daemon acknowledges one of an allocation
// it does not hold), and the daemon runs an allocation's exec jobs and
// instances only while it holds it; only an assign can be refused because
// of what the daemon holds, failing its reservation for good.
func heldAllocations(open []db.NodeCommand, unassigning map[string][]unassignedDevice, reconciled bool) map[string]bool {
	held := map[string]bool{}
	// An unassign of an unknown allocation is open, or there may be one
	// the reconcile has not queued yet.
	all := !reconciled
	for _, c := range open {
		if c.Kind == core.NodeCommandUnassign {
			known := false
			if c.AllocationID != nil {
				_, known = unassigning[*c.AllocationID]
			}
			all = all || !known
		}
	}
	var busy []unassignedDevice // devices of the open unassigns queued so far
	for _, c := range open {    // in the order queued
		switch {
		case c.Kind == core.NodeCommandUnassign && c.AllocationID != nil:
			busy = append(busy, unassigning[*c.AllocationID]...)
		case c.Kind == core.NodeCommandAssign && core.State(c.State) == core.CommandQueued && c.AllocationID != nil:
			if all || assignSharesGPU(c.Payload, busy) {
				held[*c.AllocationID] = true
			}
		}
	}
	return held
}

// unassignedDevices reads the devices of the allocations of open's
// unassigns, by allocation; none when no unassign is open.
func unassignedDevices(ctx context.Context, q *db.Queries, open []db.NodeCommand) (map[string][]unassignedDevice, error) {
	var ids []string
	for _, c := range open {
		if c.Kind == core.NodeCommandUnassign && c.AllocationID != nil {
			ids = append(ids, *c.AllocationID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := q.AllocationDevicesOf(ctx, ids)
	if err != nil {
		return nil, pg.Translate(err, "devices of unassigned allocations")
	}
	out := make(map[string][]unassignedDevice, len(rows))
	for _, r := range rows {
		devices := []unassignedDevice{}
		for _, id := range r.DeviceIds {
			devices = append(devices, unassignedDevice{id: id, slotMode: r.SlotKind})
		}
		out[r.ID] = devices
	}
	return out, nil
}

// gpuOf is the GPU a device id names: the GPU itself, or the GPU of a MIG
// instance or slot (<gpu>/<atom>).
func gpuOf(deviceID string) string {
	if i := strings.IndexByte(deviceID, '/'); i > 0 {
		return deviceID[:i]
	}
	return deviceID
}

// assignSharesGPU says whether an assign's payload names a device that
// shares a GPU with one of busy (sharesGPU); a payload it cannot read
// does, to be safe.
func assignSharesGPU(payload []byte, busy []unassignedDevice) bool {
	if len(busy) == 0 {
		return false
	}
	var a wire.AssignPayload
	if err := json.Unmarshal(payload, &a); err != nil {
		return true
	}
	for _, d := range a.Devices {
		for _, b := range busy {
			if sharesGPU(d, b) {
				return true
			}
		}
	}
	return false
}

// unassignedDevice is a device of an allocation being unassigned, with
// the mode of its slots ("" when it holds none).
type unassignedDevice struct {
	id, slotMode string
}

// sharesGPU says whether an assigned device and a device being unassigned
// are on one GPU, other than two different slots of it in one mode, which
// the daemon holds for two allocations at once. Slots of two modes are
// one GPU before and after a mode change: the new mode's tenant waits
// until the old mode's workloads are gone.
func sharesGPU(d wire.AssignedDevice, busy unassignedDevice) bool {
	if gpuOf(d.ID) != gpuOf(busy.id) && (d.GPU == "" || d.GPU != gpuOf(busy.id)) {
		return false
	}
	return d.ID == busy.id || d.Kind != string(core.AtomSlot) || !isSlotID(busy.id) || d.Mode != busy.slotMode
}

// isSlotID reports whether a device id names a time-slice or MPS slot,
// <gpu>/s<k> (a GPU's UUID has no '/').
func isSlotID(id string) bool {
	_, atom, ok := strings.Cut(id, "/")
	k, isSlot := strings.CutPrefix(atom, "s")
	return ok && isSlot && k != "" && strings.Trim(k, "0123456789") == ""
}

func dispatchOne(ctx context.Context, q *db.Queries, c db.NodeCommand, sess db.NodeSessionLockForDispatchRow,
	generation int64, held map[string]bool, rep *DispatchReport) error {
	epoch, journal := sess.SessionEpoch, sess.JournalID
	state := core.State(c.State)
	if state == core.CommandQueued {
		if cancelled, err := cancelStaleStart(ctx, q, c); err != nil || cancelled {
			if cancelled {
				rep.Cancelled = append(rep.Cancelled, c.ID)
			}
			return err
		}
		// A job of an allocation whose assign waits waits too: the daemon
		// runs nothing of an allocation it does not hold.
		if c.MinGeneration > generation || (c.AllocationID != nil && held[*c.AllocationID]) {
			rep.Waiting = append(rep.Waiting, c.ID)
			return nil
		}
		if _, err := markSent(ctx, q, c, core.CommandSent, epoch, journal); err != nil {
			return err
		}
		rep.Sent = append(rep.Sent, c.ID)
		rep.ToSend = append(rep.ToSend, nodeJobToSend(c, epoch))
		return nil
	}
	sentTo := ""
	if c.JournalID != nil {
		sentTo = *c.JournalID
	}
	switch {
	case c.Kind == core.NodeCommandAssign && !sess.InventoryReconciled:
		// Sent again only once the session's inventory is reconciled, as a
		// queued one (heldAllocations): a daemon that never received it
		// would carry it out now. (It cannot have been sent on this
		// session yet: NodeCommandMarkSent refuses that.)
		rep.Waiting = append(rep.Waiting, c.ID)
		return nil
	case sentTo != journal && !c.RetrySafe:
		if _, err := moveNodeJob(ctx, q, c, core.CommandFailed, nil, c.Output, lostMemoryReason); err != nil {
			return err
		}
		rep.Failed = append(rep.Failed, c.ID)
		return nil
	case sentTo != journal, c.DispatchedEpoch == nil || *c.DispatchedEpoch != epoch:
		if _, err := markSent(ctx, q, c, state, epoch, journal); err != nil {
			return err
		}
		rep.Resent = append(rep.Resent, c.ID)
		rep.ToSend = append(rep.ToSend, nodeJobToSend(c, epoch))
		return nil
	}
	return nil // already sent on this session
}

// markSent records a send at epoch to journal. queued → sent is a
// transition with its event; a re-send of an in-flight job keeps its state
// and version and writes no event.
func markSent(ctx context.Context, q *db.Queries, c db.NodeCommand, to core.State, epoch int64, journal string) (db.NodeCommand, error) {
	bump := int64(0)
	if core.State(c.State) != to {
		if err := core.CheckTransition(core.CommandStateTable(), core.State(c.State), to); err != nil {
			return c, err
		}
		bump = 1
	}
	rows, err := q.NodeCommandMarkSent(ctx, db.NodeCommandMarkSentParams{State: string(to), DispatchedEpoch: epoch,
		JournalID: journal, Bump: bump, ID: c.ID, Version: c.Version})
	if err != nil {
		return c, pg.Translate(err, "node command "+c.ID)
	}
	if rows == 0 {
		return c, core.Errorf(core.CodeConflict,
			"node command %s was changed concurrently, or is an assign on a session whose inventory is not reconciled", c.ID)
	}
	c.State, c.Version, c.DispatchedEpoch, c.JournalID = string(to), c.Version+bump, &epoch, &journal
	if bump == 0 {
		return c, nil
	}
	return c, emitNodeJob(ctx, q, core.CommandSent, c, func(job core.NodeCommand) any {
		return core.NodeCommandSentEventData{NodeCommand: job, SessionEpoch: epoch, JournalID: journal}
	})
}

func nodeJobToSend(c db.NodeCommand, epoch int64) NodeJobToSend {
	j := NodeJobToSend{ID: c.ID, Kind: c.Kind, Payload: c.Payload, SessionEpoch: epoch}
	if c.AllocationID != nil {
		j.AllocationID = *c.AllocationID
	}
	return j
}

// LockForDispatch locks the node's session row at epoch inside tx, the
// transaction that marks something as sent to the daemon (the send itself
// comes after the commit). It fails with
// ErrSessionSuperseded when the epoch is no longer the node's current
// connected session, and otherwise returns the session's journal id.
func LockForDispatch(ctx context.Context, tx pgx.Tx, nodeID string, epoch int64) (string, error) {
	row, err := lockSessionForDispatch(ctx, tx, nodeID, epoch)
	return row.JournalID, err
}

// lockSessionForDispatch is LockForDispatch returning the session's row:
// its journal, and whether its inventory was reconciled.
func lockSessionForDispatch(ctx context.Context, tx pgx.Tx, nodeID string, epoch int64) (db.NodeSessionLockForDispatchRow, error) {
	row, err := db.New(tx).NodeSessionLockForDispatch(ctx, db.NodeSessionLockForDispatchParams{
		NodeID: nodeID, SessionEpoch: epoch})
	if errors.Is(err, pgx.ErrNoRows) {
		return row, ErrSessionSuperseded
	}
	if err != nil {
		return row, pg.Translate(err, "node session")
	}
	return row, nil
}
