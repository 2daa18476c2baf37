package placement

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

func victimIDs(p Preemption) []string {
	ids := []string{}
	for _, v := range p.Victims {
		ids = append(ids, v.Reservation)
	}
	return ids
}

func gpus(n int) Request { return Request{Reservation: "rsv_new", GPUs: n, Kind: core.AtomGPU} }

func TestPlanPreemptionTakesTheFewestVictims(t *testing.T) {
	// Two one-GPU victims or one two-GPU victim: the one. A greedy reprieve
	// that gives back the longest first would displace the two.
	n := PreemptionCandidate{Candidate: Candidate{NodeID: "n1"},
		Victims: []Victim{{Reservation: "a", Remaining: time.Hour}, {Reservation: "b", Remaining: time.Hour},
			{Reservation: "c", Remaining: 10 * time.Hour}},
		Blockers: map[string][]string{"g0": {"a"}, "g1": {"b"}, "g2": {"c"}, "g3": {"c"}}}
	p, ok := PlanPreemption(gpus(2), []PreemptionCandidate{n})
	require.True(t, ok)
	require.Equal(t, "n1", p.NodeID)
	require.Equal(t, []string{"c"}, victimIDs(p))
}

func TestPlanPreemptionPrefersLowerPriorityThenLessRemaining(t *testing.T) {
	n := PreemptionCandidate{Candidate: Candidate{NodeID: "n1"},
		Victims: []Victim{{Reservation: "a", Priority: 5, Remaining: time.Minute}, {Reservation: "b", Priority: 1, Remaining: time.Hour},
			{Reservation: "c", Priority: 1, Remaining: time.Minute}},
		Blockers: map[string][]string{"g0": {"a"}, "g1": {"b"}, "g2": {"c"}}}
	p, ok := PlanPreemption(gpus(1), []PreemptionCandidate{n})
	require.True(t, ok)
	require.Equal(t, []string{"c"}, victimIDs(p))

	// Across nodes: one victim of priority 1 beats one of priority 5.
	m := PreemptionCandidate{Candidate: Candidate{NodeID: "n0"},
		Victims:  []Victim{{Reservation: "d", Priority: 5}},
		Blockers: map[string][]string{"h0": {"d"}}}
	p, ok = PlanPreemption(gpus(1), []PreemptionCandidate{m, n})
	require.True(t, ok)
	require.Equal(t, "n1", p.NodeID)
}

func TestPlanPreemptionNeedsEveryBlockerOfAnAtomGone(t *testing.T) {
	// g0 is booked by the victim and, later in the window, by a reservation
	// that may not be displaced (not listed as a victim): it never comes free.
	n := PreemptionCandidate{Candidate: Candidate{NodeID: "n1"},
		Victims:  []Victim{{Reservation: "a"}},
		Blockers: map[string][]string{"g0": {"a", "keep"}}}
	_, ok := PlanPreemption(gpus(1), []PreemptionCandidate{n})
	require.False(t, ok)

	// A booking of no reservation (a mode change) blocks too.
	n.Blockers = map[string][]string{"g0": {"a", ""}}
	_, ok = PlanPreemption(gpus(1), []PreemptionCandidate{n})
	require.False(t, ok)
}

func TestPlanPreemptionCountsScalarsAndEligibility(t *testing.T) {
	req := Request{Reservation: "rsv_new", VCPU: 8}
	n := PreemptionCandidate{Candidate: Candidate{NodeID: "n1", FreeVCPU: 2},
		Victims: []Victim{{Reservation: "a", VCPU: 4}, {Reservation: "b", VCPU: 6}}}
	p, ok := PlanPreemption(req, []PreemptionCandidate{n})
	require.True(t, ok)
	require.Equal(t, []string{"b"}, victimIDs(p))

	n.Cordoned = true
	_, ok = PlanPreemption(req, []PreemptionCandidate{n})
	require.False(t, ok, "a cordoned node takes no booking, preemption or not")
}

func TestPlanPreemptionManyCandidatesStillFit(t *testing.T) {
	n := PreemptionCandidate{Candidate: Candidate{NodeID: "n1"}, Blockers: map[string][]string{}}
	for i := range 20 {
		id := fmt.Sprintf("v%02d", i)
		n.Victims = append(n.Victims, Victim{Reservation: id, Priority: int32(i % 3), Remaining: time.Duration(i) * time.Minute})
		n.Blockers[fmt.Sprintf("g%02d", i)] = []string{id}
	}
	p, ok := PlanPreemption(gpus(3), []PreemptionCandidate{n})
	require.True(t, ok)
	require.Len(t, p.Victims, 3)
	for _, v := range p.Victims {
		require.Equal(t, int32(0), v.Priority, "the greedy plan gives back the most important first")
	}
}
