package commands

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
)

// Best fit comes first; among equally good nodes each reservation gets its
// own order, so concurrent placers on an idle pool spread out instead of
// all trying the lowest node id first.
func TestBestFitOrder(t *testing.T) {
	t.Parallel()
	nodes := func() []db.NodePlacementCandidatesRow {
		var rows []db.NodePlacementCandidatesRow
		for i := range 10 {
			rows = append(rows, db.NodePlacementCandidatesRow{ID: fmt.Sprintf("n%d", i), FreeAtoms: 8})
		}
		rows[7].FreeAtoms = 2 // the tightest fit
		return rows
	}
	firstAfterBest := map[string]int{}
	for r := range 100 {
		id := fmt.Sprintf("res-%d", r)
		fit := nodes()
		bestFitOrder(fit, id)
		require.Equal(t, "n7", fit[0].ID, "the fewest free atoms always comes first")
		for i := 2; i < len(fit); i++ {
			require.LessOrEqual(t, fit[i-1].FreeAtoms, fit[i].FreeAtoms)
		}
		firstAfterBest[fit[1].ID]++

		again := nodes()
		bestFitOrder(again, id)
		require.Equal(t, fit, again, "one reservation's order is stable across retries")
	}
	require.GreaterOrEqual(t, len(firstAfterBest), 8,
		"100 reservations start on most of the 9 tied nodes, not on one: %v", firstAfterBest)
	for node, n := range firstAfterBest {
		require.Less(t, n, 30, "node %s is first for %d of 100 reservations", node, n)
	}
}

// Concurrent placers on one node start on different atoms, and a request
// for several takes neighbours, returned in id order.
func TestPickAtoms(t *testing.T) {
	t.Parallel()
	free := []string{"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"}
	first := map[string]int{}
	for r := range 100 {
		id := fmt.Sprintf("res-%d", r)
		one := pickAtoms(free, 1, id, "n1")
		require.Len(t, one, 1)
		first[one[0]]++
		require.Equal(t, one, pickAtoms(free, 1, id, "n1"), "stable for one reservation")

		three := pickAtoms(free, 3, id, "n1")
		require.Len(t, three, 3)
		require.IsIncreasing(t, three, "id order: the order bookings are inserted in")
		require.Contains(t, three, one[0], "the run starts at the same offset")
	}
	require.GreaterOrEqual(t, len(first), 7, "100 reservations start on most of the 8 atoms: %v", first)
	require.Equal(t, free, pickAtoms(free, 8, "res-x", "n1"), "all of them when all are needed")
}
