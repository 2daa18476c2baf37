package placement

import (
	"cmp"
	"math/bits"
	"slices"
	"strings"
	"time"
)

// Victim is a reservation a request could displace on a node: the caller
// lists only those it may displace (preemptible, of a strictly lower
// priority than the request's).
type Victim struct {
	Reservation string
	Priority    int32
	// Remaining is how much of its window is left.
	Remaining time.Duration
	// Scalars it holds on the node: vCPUs, MB of memory, GB of disk.
	VCPU, MemoryMB, DiskGB int64
}

// PreemptionCandidate is a node with what stands in the request's way.
type PreemptionCandidate struct {
	// Candidate is the node as Decide sees it: its eligibility, its count of
	// free matching atoms and its free scalars.
	Candidate
	Victims []Victim
	// Blockers are the reservations booking each matching atom in the
	// request's window ("" for a booking of no reservation). An atom comes
	// free only when every one of them is displaced.
	Blockers map[string][]string
}

// Preemption is the plan: displace Victims on NodeID, then book there.
type Preemption struct {
	NodeID  string
	Victims []Victim // in reservation-id order
	// Node is the node as it will be once the victims are gone (their
	// atoms and scalars free), for Decide to place the request on.
	Node Candidate
}

// exactVictims bounds the exact search for the fewest victims on one node
// (2^n subsets); a node with more candidates is planned greedily.
const exactVictims = 12

// PlanPreemption chooses where req may displace reservations to fit, and
// which: the minimal set, as Kubernetes chooses its victims. On each node
// that would fit with all its victims gone, the set to displace is the one
// with the fewest victims, then the lowest highest priority among them,
// then the least remaining time in total (found exactly among up to 12
// candidates, otherwise by reprieving candidates from the most important
// down while the request still fits). Across nodes, the same order decides,
// then the node id. ok is false when no node fits even with every
// candidate displaced.
func PlanPreemption(req Request, nodes []PreemptionCandidate) (plan Preemption, ok bool) {
	var best victimSet
	for _, n := range nodes {
		if _, why := ineligible(n.Eligibility, req.Tolerations); why != "" || len(n.Victims) == 0 {
			continue
		}
		vs := slices.SortedFunc(slices.Values(n.Victims), func(a, b Victim) int { return strings.Compare(a.Reservation, b.Reservation) })
		fit := fitter{req: req, node: n, victims: vs}
		if !fit.fits(allOf(len(vs))) {
			continue
		}
		var set victimSet
		if len(vs) <= exactVictims {
			set = fit.fewest(uint64(1)<<len(vs) - 1)
		} else {
			set = fit.reprieve()
		}
		set.node, set.after = n.NodeID, fit.after(set.members)
		if !ok || set.better(best) {
			best, ok = set, true
		}
	}
	if !ok {
		return Preemption{}, false
	}
	return Preemption{NodeID: best.node, Victims: best.victims, Node: best.after}, true
}

// victimSet is one node's candidate plan, with what ranks it.
type victimSet struct {
	node      string
	after     Candidate
	members   []bool
	victims   []Victim
	highest   int32
	remaining time.Duration
}

func newVictimSet(vs []Victim, members []bool) victimSet {
	s := victimSet{members: slices.Clone(members)}
	for i, v := range vs {
		if !members[i] {
			continue
		}
		if len(s.victims) == 0 || v.Priority > s.highest {
			s.highest = v.Priority
		}
		s.remaining += v.Remaining
		s.victims = append(s.victims, v)
	}
	return s
}

// better says whether s displaces less than o: fewer victims, then a lower
// highest priority, then less remaining time, then the node id.
func (s victimSet) better(o victimSet) bool {
	if c := cmp.Compare(len(s.victims), len(o.victims)); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(s.highest, o.highest); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(s.remaining, o.remaining); c != 0 {
		return c < 0
	}
	return s.node < o.node
}

// fitter checks whether req fits on a node once a subset of its victims is
// displaced.
type fitter struct {
	req     Request
	node    PreemptionCandidate
	victims []Victim
}

func allOf(n int) []bool {
	m := make([]bool, n)
	for i := range m {
		m[i] = true
	}
	return m
}

// fits says whether req fits with the victims in members displaced.
func (f fitter) fits(members []bool) bool {
	c := f.after(members)
	return lacks(f.req, c, c.FreeAtoms) == ""
}

// after is the node with the victims in members displaced: their scalars
// free, and every atom whose bookings are all theirs.
func (f fitter) after(members []bool) Candidate {
	gone := make(map[string]bool, len(f.victims))
	c := f.node.Candidate
	for i, v := range f.victims {
		if members[i] {
			gone[v.Reservation] = true
			c.FreeVCPU += v.VCPU
			c.FreeMemoryMB += v.MemoryMB
			c.FreeDiskGB += v.DiskGB
		}
	}
	for _, blockers := range f.node.Blockers {
		freed := len(blockers) > 0
		for _, r := range blockers {
			freed = freed && gone[r]
		}
		if freed {
			c.FreeAtoms++
		}
	}
	return c
}

// fewest is the exact search: every subset of the victims, ranked by
// victimSet.better.
func (f fitter) fewest(all uint64) victimSet {
	var best victimSet
	found := false
	members := make([]bool, len(f.victims))
	for mask := uint64(1); mask <= all; mask++ {
		if found && bits.OnesCount64(mask) > len(best.victims) {
			continue
		}
		for i := range members {
			members[i] = mask&(1<<i) != 0
		}
		if !f.fits(members) {
			continue
		}
		s := newVictimSet(f.victims, members)
		if !found || s.better(best) {
			best, found = s, true
		}
	}
	return best
}

// reprieve is the greedy plan for many candidates: start with all of them
// displaced and give back each one, the most important first (highest
// priority, then most remaining time), whenever the request still fits
// without it.
func (f fitter) reprieve() victimSet {
	members := allOf(len(f.victims))
	order := make([]int, len(f.victims))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		va, vb := f.victims[a], f.victims[b]
		if c := cmp.Compare(vb.Priority, va.Priority); c != 0 {
			return c
		}
		return cmp.Compare(vb.Remaining, va.Remaining)
	})
	for _, i := range order {
		members[i] = false
		if !f.fits(members) {
			members[i] = true
		}
	}
	return newVictimSet(f.victims, members)
}
