package placement_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/placement"
)

// Generators. Small domains on purpose: models, profiles, taints and modes
// collide often, so requests fit some nodes and not others.

var (
	models      = []string{"a100", "h100"}
	migProfiles = []string{"1g.10gb", "3g.40gb"}
	taints      = []string{"gpu-only", "maintenance", "spot"}
	modes       = []core.GPUMode{core.GPUExclusive, core.GPUMIG, core.GPUTimeSlice, core.GPUMPS}
)

// rare is true for about one draw in ten, and shrinks to false.
func rare(t *rapid.T, label string) bool {
	return rapid.IntRange(0, 9).Draw(t, label) == 9
}

// subset draws each element with probability p in 10, shrinking to none.
func subset[E any](t *rapid.T, from []E, p int, label string) []E {
	var out []E
	for i, e := range from {
		if rapid.IntRange(0, 9).Draw(t, fmt.Sprintf("%s%d", label, i)) >= 10-p {
			out = append(out, e)
		}
	}
	return out
}

func genRequest(t *rapid.T) placement.Request {
	r := placement.Request{
		Reservation: rapid.SampledFrom([]string{"res-a", "res-b", "res-c"}).Draw(t, "reservation"),
		GPUs:        rapid.IntRange(0, 3).Draw(t, "gpus"),
		Kind:        rapid.SampledFrom([]core.AtomKind{core.AtomGPU, core.AtomMIG, core.AtomSlot}).Draw(t, "kind"),
		VCPU:        rapid.Int64Range(0, 4).Draw(t, "vcpu"),
		MemoryMB:    rapid.Int64Range(0, 4).Draw(t, "memory"),
		DiskGB:      rapid.Int64Range(0, 4).Draw(t, "disk"),
		Tolerations: subset(t, taints, 5, "toleration"),
	}
	if rapid.Bool().Draw(t, "withModel") {
		r.Model = rapid.SampledFrom(models).Draw(t, "model")
	}
	switch r.Kind {
	case core.AtomMIG:
		r.MIGProfile = rapid.SampledFrom(migProfiles).Draw(t, "migProfile")
	case core.AtomSlot:
		r.SlotKind = rapid.SampledFrom([]core.GPUMode{core.GPUTimeSlice, core.GPUMPS}).Draw(t, "slotKind")
	}
	return r
}

// genDevices draws a node's device tree as the devices table holds it:
// GPUs in some mode, the current atoms of their layout, sometimes retired
// atoms of an earlier one, and random health, quarantine and bookings. An
// atom's Mode is left empty (its listed GPU's counts) or set to noise.
//
// Most nodes are laid out for the request (its model and the mode that
// exposes its atoms), as a fleet mostly is for what it is asked, so that
// requests often fit; the rest, and the odd GPU, are random.
func genDevices(t *rapid.T, node string, req placement.Request) []placement.Atom {
	var atoms []placement.Atom
	laidOut := rapid.IntRange(0, 3).Draw(t, node+"laidOut") != 3
	want := core.GPUExclusive
	switch req.Kind {
	case core.AtomMIG:
		want = core.GPUMIG
	case core.AtomSlot:
		want = req.SlotKind
	}
	flags := func(a *placement.Atom, label string) {
		a.Unhealthy = rare(t, label+"unhealthy")
		a.Quarantined = rare(t, label+"quarantined")
		a.Busy = rapid.IntRange(0, 3).Draw(t, label+"busy") == 3
	}
	for g := range rapid.IntRange(0, 6).Draw(t, "gpusOn"+node) {
		label := fmt.Sprintf("%s/g%d/", node, g)
		gpu := placement.Atom{ID: fmt.Sprintf("%s-gpu%d", node, g), Kind: core.AtomGPU,
			Model: rapid.SampledFrom(models).Draw(t, label+"model"), Mode: want}
		if laidOut && req.Model != "" && !rare(t, label+"otherModel") {
			gpu.Model = req.Model
		}
		if !laidOut || rare(t, label+"otherMode") {
			gpu.Mode = rapid.SampledFrom(modes).Draw(t, label+"mode")
		}
		flags(&gpu, label)
		atoms = append(atoms, gpu)
		child := func(k int, kind core.AtomKind, profile string, retired bool) {
			a := placement.Atom{ID: fmt.Sprintf("%s/a%d", gpu.ID, k), GPU: gpu.ID, Kind: kind, Model: gpu.Model,
				Profile: profile, Retired: retired}
			if rare(t, fmt.Sprintf("%sa%dnoise", label, k)) {
				a.Mode = rapid.SampledFrom(modes).Draw(t, fmt.Sprintf("%sa%dmode", label, k))
			}
			flags(&a, fmt.Sprintf("%sa%d", label, k))
			atoms = append(atoms, a)
		}
		k := 0
		switch gpu.Mode {
		case core.GPUMIG:
			for range rapid.IntRange(1, 3).Draw(t, label+"instances") {
				profile := req.MIGProfile
				if !laidOut || profile == "" || rare(t, fmt.Sprintf("%sa%dotherProfile", label, k)) {
					profile = rapid.SampledFrom(migProfiles).Draw(t, fmt.Sprintf("%sa%dprofile", label, k))
				}
				child(k, core.AtomMIG, profile, false)
				k++
			}
		case core.GPUTimeSlice, core.GPUMPS:
			for range rapid.IntRange(1, 4).Draw(t, label+"slots") {
				child(k, core.AtomSlot, string(gpu.Mode), false)
				k++
			}
		}
		if rapid.IntRange(0, 3).Draw(t, label+"earlierLayout") == 3 { // a retired atom of an earlier layout
			switch rapid.IntRange(0, 2).Draw(t, label+"earlierKind") {
			case 0:
				child(k, core.AtomMIG, rapid.SampledFrom(migProfiles).Draw(t, label+"earlierProfile"), true)
			case 1:
				child(k, core.AtomSlot, string(rapid.SampledFrom(modes[2:]).Draw(t, label+"earlierSlot")), true)
			default: // of the request's kind, which the current layout may also have
				child(k, req.Kind, req.Profile(), true)
			}
		}
	}
	return atoms
}

func genCandidates(t *rapid.T, req placement.Request) []placement.Candidate {
	var cands []placement.Candidate
	for i := range rapid.IntRange(0, 6).Draw(t, "nodes") {
		id := fmt.Sprintf("n%d", i)
		c := placement.Candidate{NodeID: id,
			Eligibility: placement.Eligibility{
				Cordoned:          rare(t, id+"cordoned"),
				State:             "connected",
				NoScheduleReasons: subset(t, []string{"heartbeat stale", "draining"}, 1, id+"noSchedule"),
				Taints:            subset(t, taints, 1, id+"taint"),
			},
			Atoms: genDevices(t, id, req),
			// Shrinking goes to roomy nodes.
			FreeVCPU:     8 - rapid.Int64Range(0, 8).Draw(t, id+"vcpuUsed"),
			FreeMemoryMB: 8 - rapid.Int64Range(0, 8).Draw(t, id+"memoryUsed"),
			FreeDiskGB:   8 - rapid.Int64Range(0, 8).Draw(t, id+"diskUsed"),
		}
		if rapid.IntRange(0, 3).Draw(t, id+"otherState") == 3 {
			c.State = rapid.SampledFrom([]string{"registered", "lost", "disconnected", "retired"}).Draw(t, id+"state")
		}
		cands = append(cands, c)
	}
	// Node ids in a shuffled order, so that input order is not id order.
	return rapid.Permutation(cands).Draw(t, "candidateOrder")
}

// The oracle: written from the rules, not from the implementation.

func eligible(e placement.Eligibility, tolerations []string) bool {
	if e.Cordoned || len(e.NoScheduleReasons) > 0 || e.State == "lost" || e.State == "retired" {
		return false
	}
	for _, t := range e.Taints {
		if !slices.Contains(tolerations, t) {
			return false
		}
	}
	return true
}

// usable says whether req may book atom a of a node whose devices are
// atoms: the atom rule (an exclusive GPU is the atom; a MIG GPU exposes
// only its current instances; a time-slice or MPS GPU only its current
// slots of that kind), availability (healthy, not quarantined, not booked,
// and the same for its GPU), and a match with the request.
func usable(req placement.Request, atoms []placement.Atom, a placement.Atom) bool {
	if a.Unhealthy || a.Quarantined || a.Busy || a.Kind != req.Kind || (req.Model != "" && a.Model != req.Model) {
		return false
	}
	if a.GPU == "" {
		return a.Kind == core.AtomGPU && a.Mode == core.GPUExclusive
	}
	i := slices.IndexFunc(atoms, func(g placement.Atom) bool { return g.ID == a.GPU })
	if i < 0 {
		return false // the generator always lists the GPU
	}
	gpu := atoms[i]
	if gpu.Unhealthy || gpu.Quarantined || a.Retired {
		return false
	}
	switch a.Kind {
	case core.AtomMIG:
		return gpu.Mode == core.GPUMIG && (req.MIGProfile == "" || a.Profile == req.MIGProfile)
	case core.AtomSlot:
		return (gpu.Mode == core.GPUTimeSlice || gpu.Mode == core.GPUMPS) && a.Profile == string(gpu.Mode) &&
			(req.SlotKind == "" || a.Profile == string(req.SlotKind))
	}
	return false
}

func freeCount(req placement.Request, atoms []placement.Atom) int64 {
	var n int64
	for _, a := range atoms {
		if usable(req, atoms, a) {
			n++
		}
	}
	return n
}

func fits(req placement.Request, c placement.Candidate) bool {
	return eligible(c.Eligibility, req.Tolerations) &&
		(req.GPUs == 0 || freeCount(req, c.Atoms) >= int64(req.GPUs)) &&
		c.FreeVCPU >= req.VCPU && c.FreeMemoryMB >= req.MemoryMB && c.FreeDiskGB >= req.DiskGB
}

func clone(cands []placement.Candidate) []placement.Candidate {
	out := slices.Clone(cands)
	for i := range out {
		out[i].Atoms = slices.Clone(out[i].Atoms)
		out[i].Taints = slices.Clone(out[i].Taints)
		out[i].NoScheduleReasons = slices.Clone(out[i].NoScheduleReasons)
	}
	return out
}

// Every candidate is chosen or rejected, exactly once, and every rejection
// says why; a node is chosen exactly when it fits.
func TestPropertyEveryCandidateChosenOrExplained(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		req := genRequest(t)
		cands := genCandidates(t, req)
		d := placement.Decide(req, cands)
		seen := map[string]int{}
		for _, c := range d.Choices {
			seen[c.NodeID]++
		}
		for _, r := range d.Rejected {
			seen[r.NodeID]++
			if strings.TrimSpace(r.Reason) == "" {
				t.Fatalf("%s rejected without a reason", r.NodeID)
			}
		}
		for _, c := range cands {
			if seen[c.NodeID] != 1 {
				t.Fatalf("%s is in the decision %d times", c.NodeID, seen[c.NodeID])
			}
			chosen := slices.ContainsFunc(d.Choices, func(ch placement.Choice) bool { return ch.NodeID == c.NodeID })
			if chosen != fits(req, c) {
				t.Fatalf("%s chosen=%v, but fits=%v", c.NodeID, chosen, fits(req, c))
			}
		}
		if len(seen) != len(cands) {
			t.Fatalf("decision names %d nodes, input had %d", len(seen), len(cands))
		}
	})
}

// A choice is an eligible node with room for the scalars, and exactly the
// requested number of its own atoms, each free and bookable by the atom rule,
// never a GPU together with one of its atoms; best fit first.
func TestPropertyChoicesAreSound(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		req := genRequest(t)
		cands := genCandidates(t, req)
		byNode := map[string]placement.Candidate{}
		for _, c := range cands {
			byNode[c.NodeID] = c
		}
		d := placement.Decide(req, cands)
		for i, ch := range d.Choices {
			c := byNode[ch.NodeID]
			if !eligible(c.Eligibility, req.Tolerations) {
				t.Fatalf("chose ineligible node %s (%+v)", c.NodeID, c.Eligibility)
			}
			if c.FreeVCPU < req.VCPU || c.FreeMemoryMB < req.MemoryMB || c.FreeDiskGB < req.DiskGB {
				t.Fatalf("chose %s without room for the scalars", c.NodeID)
			}
			if want := freeCount(req, c.Atoms); ch.FreeAtoms != want {
				t.Fatalf("%s: FreeAtoms %d, the rules count %d", c.NodeID, ch.FreeAtoms, want)
			}
			if i > 0 && d.Choices[i-1].FreeAtoms > ch.FreeAtoms {
				t.Fatalf("not best fit first: %+v", d.Choices)
			}
			if len(ch.DeviceIDs) != req.GPUs {
				t.Fatalf("%s: picked %d atoms, requested %d", c.NodeID, len(ch.DeviceIDs), req.GPUs)
			}
			if !slices.IsSorted(ch.DeviceIDs) || len(slices.Compact(slices.Clone(ch.DeviceIDs))) != len(ch.DeviceIDs) {
				t.Fatalf("%s: atoms not distinct and in id order: %v", c.NodeID, ch.DeviceIDs)
			}
			picked := map[string]bool{}
			for _, id := range ch.DeviceIDs {
				j := slices.IndexFunc(c.Atoms, func(a placement.Atom) bool { return a.ID == id })
				if j < 0 {
					t.Fatalf("%s: picked %s, not one of its atoms", c.NodeID, id)
				}
				if !usable(req, c.Atoms, c.Atoms[j]) {
					t.Fatalf("%s: picked %+v, which is busy, unavailable, unbookable or not requested", c.NodeID, c.Atoms[j])
				}
				picked[id] = true
			}
			for _, id := range ch.DeviceIDs {
				j := slices.IndexFunc(c.Atoms, func(a placement.Atom) bool { return a.ID == id })
				if gpu := c.Atoms[j].GPU; gpu != "" && picked[gpu] {
					t.Fatalf("%s: picked both GPU %s and its atom %s", c.NodeID, gpu, id)
				}
			}
			// Under the node lock, commands picks with Pick: the same atoms.
			again, why := placement.Pick(req, c.NodeID, c.Atoms)
			if why != "" || !slices.Equal(again, ch.DeviceIDs) {
				t.Fatalf("%s: Pick gives %v (%q), Decide %v", c.NodeID, again, why, ch.DeviceIDs)
			}
		}
	})
}

// The same input gives the same decision, whatever the order of the
// candidates (rejections follow the input order, so they are compared node
// by node), and Decide does not change its input.
func TestPropertyDeterministic(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		req := genRequest(t)
		cands := genCandidates(t, req)
		before := clone(cands)
		d := placement.Decide(req, cands)
		require.Equal(t, before, cands, "Decide changed its input")
		require.Equal(t, d, placement.Decide(req, clone(cands)))

		shuffled := placement.Decide(req, rapid.Permutation(clone(cands)).Draw(t, "shuffled"))
		require.Equal(t, d.Choices, shuffled.Choices)
		reasons := func(rs []placement.Rejection) map[string]string {
			m := map[string]string{}
			for _, r := range rs {
				m[r.NodeID] = r.Reason
			}
			return m
		}
		require.Equal(t, reasons(d.Rejected), reasons(shuffled.Rejected))
		rejected := reasons(d.Rejected)
		var inputOrder, got []string
		for _, c := range cands {
			if _, ok := rejected[c.NodeID]; ok {
				inputOrder = append(inputOrder, c.NodeID)
			}
		}
		for _, r := range d.Rejected {
			got = append(got, r.NodeID)
		}
		require.Equal(t, inputOrder, got, "rejections follow the input order")
	})
}

// With counted atoms only (what commands passes before it locks a node),
// the store's count decides and a choice names no atoms.
func TestPropertyCountedCandidates(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		req := genRequest(t)
		cands := genCandidates(t, req)
		counted := clone(cands)
		for i := range counted {
			counted[i].FreeAtoms = freeCount(req, counted[i].Atoms)
			counted[i].Atoms = nil
		}
		listed, byCount := placement.Decide(req, cands), placement.Decide(req, counted)
		require.Equal(t, listed.Rejected, byCount.Rejected)
		require.Len(t, byCount.Choices, len(listed.Choices))
		for i, ch := range byCount.Choices {
			require.Equal(t, listed.Choices[i].NodeID, ch.NodeID)
			require.Equal(t, listed.Choices[i].FreeAtoms, ch.FreeAtoms)
			require.Empty(t, ch.DeviceIDs)
		}
	})
}

func TestRejectionReasons(t *testing.T) {
	t.Parallel()
	gpus := func(n int) []placement.Atom {
		var atoms []placement.Atom
		for i := range n {
			atoms = append(atoms, placement.Atom{ID: fmt.Sprintf("g%d", i), Kind: core.AtomGPU, Model: "a100",
				Mode: core.GPUExclusive})
		}
		return atoms
	}
	roomy := placement.Candidate{FreeVCPU: 64, FreeMemoryMB: 1 << 20, FreeDiskGB: 1000}
	two := placement.Request{Reservation: "r", GPUs: 2, Kind: core.AtomGPU, Model: "a100", Tolerations: []string{"spot"}}
	for _, tc := range []struct {
		name   string
		req    placement.Request
		edit   func(*placement.Candidate)
		reason string
	}{
		{"cordoned first", two, func(c *placement.Candidate) { c.Cordoned, c.State = true, "lost" }, "cordoned"},
		{"no-schedule reasons", two, func(c *placement.Candidate) {
			c.NoScheduleReasons = []string{"heartbeat stale", "draining"}
		}, "not schedulable (heartbeat stale, draining)"},
		{"lost", two, func(c *placement.Candidate) { c.State = "lost" }, "node is lost"},
		{"retired", two, func(c *placement.Candidate) { c.State = "retired" }, "node is retired"},
		{"untolerated taint", two, func(c *placement.Candidate) { c.Taints = []string{"spot", "maintenance"} },
			"has taint maintenance that the reservation does not tolerate"},
		{"too few GPUs of the model", two, func(c *placement.Candidate) {
			c.Atoms = gpus(3)
			c.Atoms[0].Busy, c.Atoms[1].Model = true, "h100"
		}, "1 free a100 GPUs in the window, needs 2"},
		{"whole GPUs, counted", placement.Request{GPUs: 1, Kind: core.AtomGPU}, nil,
			"0 free whole GPUs in the window, needs 1"},
		{"MIG instances", placement.Request{GPUs: 1, Kind: core.AtomMIG, MIGProfile: "1g.10gb"}, nil,
			"0 free MIG 1g.10gb instances in the window, needs 1"},
		{"slots", placement.Request{GPUs: 3, Kind: core.AtomSlot, SlotKind: core.GPUMPS},
			func(c *placement.Candidate) { c.FreeAtoms = 2 }, "2 free mps slots in the window, needs 3"},
		// A model asked for is named: the node may have free slots or
		// instances of the kind, of another model, and a reason that left
		// the model out read as if it had none at all.
		{"slots of a model", placement.Request{GPUs: 1, Kind: core.AtomSlot, SlotKind: core.GPUTimeSlice, Model: "h100"},
			nil, "0 free h100 time-slice slots in the window, needs 1"},
		{"MIG instances of a model", placement.Request{GPUs: 1, Kind: core.AtomMIG, MIGProfile: "1g.10gb", Model: "a100"},
			nil, "0 free a100 MIG 1g.10gb instances in the window, needs 1"},
		{"everything short", placement.Request{GPUs: 2, Kind: core.AtomGPU, VCPU: 4, MemoryMB: 200, DiskGB: 2},
			func(c *placement.Candidate) { c.FreeAtoms, c.FreeVCPU, c.FreeMemoryMB, c.FreeDiskGB = 1, 3, 100, 1 },
			"1 free whole GPUs in the window, needs 2; 3 vCPU free, needs 4; 100 MB memory free, needs 200; 1 GB disk free, needs 2"},
		{"scalars only", placement.Request{MemoryMB: 10}, func(c *placement.Candidate) { c.FreeMemoryMB = 9 },
			"9 MB memory free, needs 10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := roomy
			c.NodeID = "n1"
			if tc.edit != nil {
				tc.edit(&c)
			}
			d := placement.Decide(tc.req, []placement.Candidate{c})
			require.Empty(t, d.Choices)
			// The filter that said no, as metrics count it.
			filter := map[string]placement.Filter{"cordoned first": placement.FilterCordoned,
				"no-schedule reasons": placement.FilterNotSchedulable, "lost": placement.FilterNodeState,
				"retired": placement.FilterNodeState, "untolerated taint": placement.FilterTaint}[tc.name]
			if filter == "" {
				filter = placement.FilterCapacity
			}
			require.Equal(t, []placement.Rejection{{NodeID: "n1", Filter: filter, Reason: tc.reason}}, d.Rejected)
		})
	}

	_, why := placement.Pick(placement.Request{GPUs: 2, Kind: core.AtomGPU}, "n1", gpus(1))
	require.Equal(t, "only 1 free whole GPUs in the window, needs 2", why)
}

// The atom rule on one GPU in each mode: a request for whole GPUs gets only
// the exclusive one, a MIG request only current instances of a MIG GPU, a
// slot request only current slots of its kind.
func TestAtomRule(t *testing.T) {
	t.Parallel()
	atoms := []placement.Atom{
		{ID: "ex", Kind: core.AtomGPU, Model: "a100", Mode: core.GPUExclusive},
		{ID: "ex/s0", GPU: "ex", Kind: core.AtomSlot, Model: "a100", Profile: "mps", Mode: core.GPUMPS, Retired: true},
		{ID: "mig", Kind: core.AtomGPU, Model: "a100", Mode: core.GPUMIG},
		{ID: "mig/mig-0", GPU: "mig", Kind: core.AtomMIG, Model: "a100", Profile: "1g.10gb"},
		{ID: "mig/mig-1", GPU: "mig", Kind: core.AtomMIG, Model: "a100", Profile: "1g.10gb", Retired: true},
		{ID: "mig/s0", GPU: "mig", Kind: core.AtomSlot, Model: "a100", Profile: "mps", Mode: core.GPUMPS},
		{ID: "ts", Kind: core.AtomGPU, Model: "a100", Mode: core.GPUTimeSlice},
		{ID: "ts/s0", GPU: "ts", Kind: core.AtomSlot, Model: "a100", Profile: "time-slice"},
		{ID: "ts/s1", GPU: "ts", Kind: core.AtomSlot, Model: "a100", Profile: "mps"},
		{ID: "sick", Kind: core.AtomGPU, Model: "a100", Mode: core.GPUMPS, Quarantined: true},
		{ID: "sick/s0", GPU: "sick", Kind: core.AtomSlot, Model: "a100", Profile: "mps"},
	}
	for _, tc := range []struct {
		req  placement.Request
		free []string
	}{
		{placement.Request{Kind: core.AtomGPU}, []string{"ex"}},
		{placement.Request{Kind: core.AtomMIG, MIGProfile: "1g.10gb"}, []string{"mig/mig-0"}},
		{placement.Request{Kind: core.AtomSlot, SlotKind: core.GPUTimeSlice}, []string{"ts/s0"}},
		{placement.Request{Kind: core.AtomSlot, SlotKind: core.GPUMPS}, nil},
	} {
		require.Equal(t, tc.free, placement.Free(tc.req, atoms), "%+v", tc.req)
	}
}

// Best fit first; ties in a hashed order that differs between reservations
// and is stable for one.
func TestOrder(t *testing.T) {
	t.Parallel()
	var cands []placement.Candidate
	for i := range 6 {
		cands = append(cands, placement.Candidate{NodeID: fmt.Sprintf("n%d", i), FreeAtoms: 4})
	}
	cands[3].FreeAtoms = 1
	req := placement.Request{GPUs: 1, Kind: core.AtomGPU}
	firsts := map[string]bool{}
	for r := range 50 {
		req.Reservation = fmt.Sprintf("res-%d", r)
		d := placement.Decide(req, cands)
		require.Len(t, d.Choices, 6)
		require.Equal(t, "n3", d.Choices[0].NodeID)
		firsts[d.Choices[1].NodeID] = true
		require.Equal(t, d, placement.Decide(req, cands))
	}
	require.Len(t, firsts, 5, "the tied nodes each come first for some reservation")
}
