// Package placement decides where a reservation goes: given the request and
// plain candidate nodes (their eligibility, free atoms and free scalars), it
// returns the nodes that fit, best first, with the atoms to book, and a reason
// for every node that does not. It is pure: no SQL, no I/O, no clock. The
// caller (commands/) loads the candidates, and books the choices in order
// under the database's guards, which decide correctness; this package only
// decides what to try first and explains what it will not try.
package placement

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/bettercompute/compute/core"
)

// Request is one reservation's request as the placer sees it.
type Request struct {
	// Reservation is the reservation's id. It seeds the tie-breaks, so one
	// reservation gets the same order on every retry and different
	// reservations spread out.
	Reservation string
	// GPUs is the number of atoms to book, all on one node, of Kind: whole
	// GPUs (of Model, when set), MIG instances of MIGProfile, or slots of
	// SlotKind ("time-slice" or "mps").
	GPUs       int
	Kind       core.AtomKind
	Model      string
	MIGProfile string
	SlotKind   core.GPUMode
	// Scalars: vCPUs, MB of memory and GB of disk.
	VCPU, MemoryMB, DiskGB int64
	// Tolerations are the node taints the reservation accepts.
	Tolerations []string
}

// Profile is the atom profile the request matches: the MIG profile, the
// slot kind, or "" (any) for whole GPUs.
func (r Request) Profile() string {
	switch r.Kind {
	case core.AtomMIG:
		return r.MIGProfile
	case core.AtomSlot:
		return string(r.SlotKind)
	}
	return ""
}

// Describe names the requested atoms in a reason ("MIG 1g.10gb instances",
// "mps slots", "a100 GPUs", "whole GPUs"), with the model when one was asked
// for ("h100 time-slice slots"): a node with free slots or instances of
// another model has none of these, and a reason without the model said it
// had none of the kind at all.
func (r Request) Describe() string {
	model := ""
	if r.Model != "" {
		model = r.Model + " "
	}
	switch r.Kind {
	case core.AtomMIG:
		return model + "MIG " + r.MIGProfile + " instances"
	case core.AtomSlot:
		return model + string(r.SlotKind) + " slots"
	}
	if r.Model != "" {
		return r.Model + " GPUs"
	}
	return "whole GPUs"
}

// Eligibility is what decides whether a node takes new bookings at all.
type Eligibility struct {
	Cordoned bool
	// NoScheduleReasons are the system's reasons the node takes no new
	// bookings (stale heartbeat, draining, ...); any one makes it ineligible.
	NoScheduleReasons []string
	// State is the node's lifecycle state; "lost" and "retired" are
	// ineligible.
	State  string
	Taints []string
}

// Atom is one device of a node: a whole GPU (GPU == ""), or a MIG instance or
// a time-slice or MPS slot of the GPU named by GPU.
type Atom struct {
	ID string
	// GPU is the parent GPU of a MIG instance or slot, "" for a GPU.
	GPU     string
	Kind    core.AtomKind
	Model   string
	Profile string // the MIG profile or the slot kind; "" for a GPU
	// Mode is how the GPU is shared: for a GPU its own mode, for a MIG
	// instance or slot its GPU's. When the GPU is listed too, its Mode is
	// the one that counts. It decides the atom rule.
	Mode    core.GPUMode
	Retired bool // an atom of an earlier layout of its GPU
	// Unhealthy and Quarantined make the atom unavailable. They apply to
	// the atom or its GPU; a listed GPU's flags apply to its atoms too.
	Unhealthy   bool
	Quarantined bool
	// Busy says the atom is booked during the request's window.
	Busy bool
}

// Candidate is one node the request could go to.
type Candidate struct {
	NodeID string
	Eligibility
	// Atoms are the node's devices, in the order the atoms are to be
	// picked from (the store's device-id order). When given, Decide finds
	// the free matching ones itself and each choice names the atoms to
	// book. When empty, FreeAtoms is the store's count of free matching
	// atoms, and a choice names none: the caller lists them once it holds
	// the node, and picks with Pick.
	Atoms     []Atom
	FreeAtoms int64
	// Free scalar capacity: vCPUs, MB of memory, GB of disk.
	FreeVCPU, FreeMemoryMB, FreeDiskGB int64
}

// Choice is a node that fits.
type Choice struct {
	NodeID string
	// FreeAtoms is the node's number of free matching atoms: fewer is a
	// better fit.
	FreeAtoms int64
	// DeviceIDs are the atoms to book, in id order: Request.GPUs of them
	// when the candidate listed its atoms, none when it only counted them.
	DeviceIDs []string
}

// Rejection is a node that does not fit, and why: the filter that
// rejected it (a constant that metrics count, as Nomad's feasibility
// checkers and Kubernetes' plugins name theirs) and the reason in words.
type Rejection struct {
	NodeID string
	Filter Filter
	Reason string // never empty
}

// Filter names why a node was rejected.
type Filter string

// The filters, in the order they are applied.
const (
	FilterCordoned       Filter = "cordoned"
	FilterNotSchedulable Filter = "not-schedulable" // a system reason: unreachable, draining, …
	FilterNodeState      Filter = "node-state"      // lost or retired
	FilterTaint          Filter = "untolerated-taint"
	FilterCapacity       Filter = "insufficient-capacity" // GPUs, vCPU, memory or disk
)

// Filters are every filter, for metrics that start each at zero.
var Filters = []Filter{FilterCordoned, FilterNotSchedulable, FilterNodeState, FilterTaint, FilterCapacity}

// Decision is where a request can go.
type Decision struct {
	// Choices are the nodes that fit, best first: the order to try them.
	Choices []Choice
	// Rejected has one entry per other candidate, in the input order.
	Rejected []Rejection
}

// Decide places req among cands, whose node ids are unique. Every candidate
// ends up in exactly one of Choices and Rejected. The order of Choices does
// not depend on the order of cands; the same input gives the same decision.
//
// The policy is best fit: the node with the fewest free matching atoms that
// still fits comes first, so that large holes stay free for large requests.
// Ties (every node of an idle pool) are broken by a hash of the reservation
// and the node, so that concurrent placers start on different nodes instead
// of all racing for the lowest id, while one reservation's order stays the
// same across its retries; then by node id.
func Decide(req Request, cands []Candidate) Decision {
	var d Decision
	for _, c := range cands {
		if f, why := ineligible(c.Eligibility, req.Tolerations); why != "" {
			d.Rejected = append(d.Rejected, Rejection{NodeID: c.NodeID, Filter: f, Reason: why})
			continue
		}
		free := c.FreeAtoms
		var freeIDs []string
		if len(c.Atoms) > 0 {
			freeIDs = Free(req, c.Atoms)
			free = int64(len(freeIDs))
		}
		if why := lacks(req, c, free); why != "" {
			d.Rejected = append(d.Rejected, Rejection{NodeID: c.NodeID, Filter: FilterCapacity, Reason: why})
			continue
		}
		ch := Choice{NodeID: c.NodeID, FreeAtoms: free}
		if len(c.Atoms) > 0 && req.GPUs > 0 {
			ch.DeviceIDs = PickAtoms(freeIDs, req.GPUs, req.Reservation, c.NodeID)
		}
		d.Choices = append(d.Choices, ch)
	}
	slices.SortStableFunc(d.Choices, func(a, b Choice) int {
		if a.FreeAtoms != b.FreeAtoms {
			return cmp.Compare(a.FreeAtoms, b.FreeAtoms)
		}
		if c := cmp.Compare(TieBreak(req.Reservation, a.NodeID), TieBreak(req.Reservation, b.NodeID)); c != 0 {
			return c
		}
		return strings.Compare(a.NodeID, b.NodeID)
	})
	return d
}

// Ineligible says why a node with e may not take new bookings of a
// reservation with these tolerations, or "".
func Ineligible(e Eligibility, tolerations []string) string {
	_, why := ineligible(e, tolerations)
	return why
}

// ineligible is Ineligible with the filter that says no.
func ineligible(e Eligibility, tolerations []string) (Filter, string) {
	switch {
	case e.Cordoned:
		return FilterCordoned, "cordoned"
	case len(e.NoScheduleReasons) > 0:
		return FilterNotSchedulable, "not schedulable (" + strings.Join(e.NoScheduleReasons, ", ") + ")"
	case e.State == string(core.NodeLost) || e.State == string(core.NodeRetired):
		return FilterNodeState, "node is " + e.State
	}
	for _, t := range e.Taints {
		if !slices.Contains(tolerations, t) {
			return FilterTaint, "has taint " + t + " that the reservation does not tolerate"
		}
	}
	return "", ""
}

// lacks says which part of req an eligible node with free matching atoms
// cannot hold, or "".
func lacks(req Request, c Candidate, free int64) string {
	var out []string
	if req.GPUs > 0 && free < int64(req.GPUs) {
		out = append(out, fmt.Sprintf("%d free %s in the window, needs %d", free, req.Describe(), req.GPUs))
	}
	for _, r := range []struct {
		name       string
		free, need int64
	}{{"vCPU", c.FreeVCPU, req.VCPU}, {"MB memory", c.FreeMemoryMB, req.MemoryMB}, {"GB disk", c.FreeDiskGB, req.DiskGB}} {
		if r.need > r.free {
			out = append(out, fmt.Sprintf("%d %s free, needs %d", r.free, r.name, r.need))
		}
	}
	return strings.Join(out, "; ")
}

// Bookable reports whether the atom rule lets a be booked at all: a GPU in
// exclusive mode is itself the one atom; a MIG GPU exposes only its (current)
// instances, a time-slice or MPS GPU only its (current) slots of that kind.
// So a GPU and one of its atoms are never both bookable.
func Bookable(a Atom) bool {
	switch a.Kind {
	case core.AtomGPU:
		return a.GPU == "" && a.Mode == core.GPUExclusive
	case core.AtomMIG:
		return a.GPU != "" && !a.Retired && a.Mode == core.GPUMIG
	case core.AtomSlot:
		return a.GPU != "" && !a.Retired && (a.Mode == core.GPUTimeSlice || a.Mode == core.GPUMPS) &&
			a.Profile == string(a.Mode)
	}
	return false
}

// Free returns the ids of the atoms req can book: bookable by the atom rule,
// healthy and not quarantined (nor their GPU), not busy in the window, and
// of the requested kind, model and profile. They keep the order of atoms.
func Free(req Request, atoms []Atom) []string {
	gpus := make(map[string]Atom)
	for _, a := range atoms {
		if a.GPU == "" {
			gpus[a.ID] = a
		}
	}
	var ids []string
	for _, a := range atoms {
		if g, ok := gpus[a.GPU]; ok && a.GPU != "" {
			a.Mode = g.Mode
			a.Unhealthy = a.Unhealthy || g.Unhealthy
			a.Quarantined = a.Quarantined || g.Quarantined
		}
		switch {
		case !Bookable(a), a.Unhealthy, a.Quarantined, a.Busy, a.Kind != req.Kind,
			req.Model != "" && a.Model != req.Model,
			req.Profile() != "" && a.Profile != req.Profile():
			continue
		}
		ids = append(ids, a.ID)
	}
	return ids
}

// Pick chooses the atoms to book for req on a node the caller holds, from
// its atoms; or says why there are too few.
func Pick(req Request, nodeID string, atoms []Atom) ([]string, string) {
	if req.GPUs <= 0 {
		return nil, ""
	}
	free := Free(req, atoms)
	if len(free) < req.GPUs {
		return nil, fmt.Sprintf("only %d free %s in the window, needs %d", len(free), req.Describe(), req.GPUs)
	}
	return PickAtoms(free, req.GPUs, req.Reservation, nodeID), ""
}

// PickAtoms chooses count of a node's free atoms (given in id order, at
// least count of them): a run of neighbours starting at an offset that
// depends on the reservation. With the first free atoms every time,
// concurrent placers on one node all queued on the same atom's booking and
// all but one lost the node; with an offset they mostly take different
// atoms, while a multi-atom request still takes neighbours (slots of one
// GPU). The result is in id order, the order bookings are inserted and
// devices locked in.
func PickAtoms(free []string, count int, reservation, nodeID string) []string {
	if count <= 0 || len(free) == 0 {
		return nil
	}
	start := int(TieBreak(reservation, nodeID) % uint64(len(free)))
	picked := make([]string, 0, count)
	for i := range min(count, len(free)) {
		picked = append(picked, free[(start+i)%len(free)])
	}
	slices.Sort(picked)
	return picked
}

// TieBreak orders equally good nodes for one reservation: a hash of the
// reservation and node ids, different for each reservation.
func TieBreak(reservation, nodeID string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(reservation))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(nodeID))
	return h.Sum64()
}
