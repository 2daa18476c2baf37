package commands_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/placement"
)

// The placer reports the filter of every node it turns down, so that a
// metric can count them: a cordoned node is "cordoned", a full one
// "insufficient-capacity".
func TestPlacementCountsRejectionsByFilter(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	var mu sync.Mutex
	counts := map[string]int{}
	h := commands.New(d.Pool, commands.Config{PlacementRejected: func(f string) {
		mu.Lock()
		defer mu.Unlock()
		counts[f]++
	}})
	commandstest.Seed(t, d, h, 2)
	commandstest.Node(t, h, "n1", exclusive)
	commandstest.Node(t, h, "n2", exclusive)
	ctx := context.Background()
	_, err := h.CordonNode(ctx, commandstest.Operator, commands.CordonNode{NodeID: "n1"})
	require.NoError(t, err)
	start, end := window(1, 2)
	res, err := h.CreateReservation(ctx, commandstest.TenantA, commands.CreateReservation{PoolID: commandstest.Pool,
		GPUs: 1, Start: start, End: end})
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, res.Reservation.State)
	require.Equal(t, "n2", res.Reservation.NodeID)
	require.Equal(t, map[string]int{string(placement.FilterCordoned): 1}, counts)
	// n2 is now full for that window: the next one is turned down by both.
	_, err = h.CreateReservation(ctx, commandstest.TenantA, commands.CreateReservation{PoolID: commandstest.Pool,
		GPUs: 1, Start: start, End: end})
	require.NoError(t, err)
	require.Equal(t, map[string]int{string(placement.FilterCordoned): 2, string(placement.FilterCapacity): 1}, counts)
}
