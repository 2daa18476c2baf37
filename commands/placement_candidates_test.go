package commands_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// TestPlacementCandidatesReadTheSampleOnly holds placement flat with fleet
// size: a site-wide create over 120 nodes in 12 pools, with a sample of 8,
// reads at most 2 × 8 node rows (two index range scans, wrapping around),
// not the site's 120, whatever its seed; a pool-wide one returns at most its
// pool's 10 from the scans. The statement is the one a real create sent,
// with its arguments, run again under EXPLAIN ANALYZE.
//
// The site-wide count includes the rows a filter dropped, so a seq scan
// fails it. The pool-wide one does not: for a pool of 10 in a table of three
// pages the planner rightly prefers one seq scan to ten index probes.
func TestPlacementCandidatesReadTheSampleOnly(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	capture := newStatementCapture()
	pool, err := pg.Connect(context.Background(), d.URL, pg.PoolOptions{MaxConns: 2,
		IdleInTxTimeout: time.Minute, Tracer: capture})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	h := commands.New(pool, commands.Config{PlacementSample: 8})
	commandstest.Seed(t, d, h, 2)
	ctx := context.Background()
	for p := range 12 {
		poolID := fmt.Sprintf("fra1-p%02d", p)
		_, err := h.CreatePool(ctx, operator, commands.CreatePool{ID: poolID, SiteID: "fra1", Kind: commands.PoolBareMetal})
		require.NoError(t, err)
		for n := range 10 {
			id := fmt.Sprintf("p%02d-n%d", p, n)
			_, err := h.RegisterNode(ctx, operator, commands.RegisterNode{ID: id, PoolID: poolID, VCPU: 8, MemoryMB: 1024,
				DiskGB: 10, GPUs: []commands.GPUInventory{{UUID: "GPU-" + id, Model: "h100", MemoryMB: 81920, Layout: exclusive}}})
			require.NoError(t, err)
		}
	}
	// As autovacuum would: without statistics the planner takes a
	// 120-row table for a small one and reads it whole.
	_, err = pool.Exec(ctx, "ANALYZE nodes")
	require.NoError(t, err)
	start, end := window(1, 2)
	plan := func(cmd commands.CreateReservation) pgtest.Plan {
		t.Helper()
		res, err := h.CreateReservation(ctx, tenantA, cmd)
		require.NoError(t, err)
		require.Equal(t, core.ReservationBooked, res.Reservation.State)
		sql, args := capture.last("NodePlacementCandidates")
		require.NotEmpty(t, sql, "the create sent no NodePlacementCandidates")
		var plan []struct{ Plan pgtest.Plan }
		require.NoError(t, pool.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&plan))
		return plan[0].Plan
	}
	// Every create has a new reservation id, so a new seed: the plan must
	// not depend on where the seed falls.
	for range 20 {
		site := plan(commands.CreateReservation{SiteID: "fra1", GPUs: 1, GPUModel: "h100", Start: start, End: end}).RowsRead("nodes")
		require.Positive(t, site)
		require.LessOrEqual(t, site, 2*8, "node rows read for a site-wide sample of 8 over 120 nodes")
	}
	inPool := plan(commands.CreateReservation{PoolID: "fra1-p03", GPUs: 1, GPUModel: "h100", Start: start, End: end}).RowsReturned("nodes")
	require.LessOrEqual(t, inPool, 2*10, "node rows the scans returned for a sample of 8 of a pool of 10")
}
