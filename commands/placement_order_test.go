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
