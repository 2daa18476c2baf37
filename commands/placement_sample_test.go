package commands_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// The placer scores a sample of a large pool first and falls back to every
// node when nothing in the sample fits: with one free node among ten and a
// sample of two, every reservation still lands on it, and a reservation
// that fits nowhere is pending with every node's reason.
func TestPlacementSampleFallsBackToEveryNode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	*f.h = *commands.New(f.d.Pool, commands.Config{PlacementSample: 2})
	for i := range 10 {
		f.node(t, fmt.Sprintf("n%d", i), exclusive, exclusive, exclusive, exclusive)
		if i != 7 {
			_, err := f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: fmt.Sprintf("n%d", i)})
			require.NoError(t, err)
		}
	}
	for range 4 {
		res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
		require.Equal(t, core.ReservationBooked, res.Reservation.State)
		require.Equal(t, "n7", res.Reservation.NodeID, "the only uncordoned node, in or out of the sample")
	}

	res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	require.Equal(t, core.ReservationPending, res.Reservation.State, "n7's four GPUs are taken")
	require.Len(t, res.Reservation.Conditions, 1)
	msg := res.Reservation.Conditions[0].Message
	for i := range 10 {
		require.Contains(t, msg, fmt.Sprintf("n%d:", i), "every node's reason, not only the sample's")
	}
	require.Equal(t, 9, strings.Count(msg, "cordoned"), msg)
	f.requireInvariants(t)
}

// In a pool larger than the sample, different reservations are scored on
// different samples: with a sample of four of twenty idle nodes, 30
// reservations spread over much of the pool. (A sample is a run of nodes in
// a fixed hashed order from a point hashed from the reservation id; 300
// simulated runs of this test used 9 to 20 distinct nodes.)
func TestPlacementSampleSpreadsOverThePool(t *testing.T) {
	t.Parallel()
	f := setup(t)
	*f.h = *commands.New(f.d.Pool, commands.Config{PlacementSample: 4})
	for i := range 20 {
		f.node(t, fmt.Sprintf("n%d", i), exclusive, exclusive, exclusive, exclusive, exclusive, exclusive, exclusive, exclusive)
	}
	used := map[string]int{}
	for range 30 {
		res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
		require.Equal(t, core.ReservationBooked, res.Reservation.State)
		used[res.Reservation.NodeID]++
		_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: res.Reservation.ID})
		require.NoError(t, err)
	}
	require.GreaterOrEqual(t, len(used), 8, "30 reservations on 4-node samples of 20 idle nodes: %v", used)
	f.requireInvariants(t)
}
