package projections_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/projections"
)

// A rebuild after retention pruned the registrations of every node, GPU
// and pool, and the bookings of every reservation, still has them all:
// fleet and device-holders start from the write model (Seeder), and the
// events kept after the prune apply on top. The rebuilt tables equal the
// live ones, save for when a row was last written where that event was
// pruned: position 0 (and for a node its registration time).
func TestRebuildAfterPruningKeepsTheFleetAndItsHolds(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rs := f.scenario(t)
	f.catchUp(t)

	// Two hours on, with a retention of one hour, the whole scenario goes
	// but its newest event (the log always keeps that one).
	f.d.AdvanceSimClock(t, 2*time.Hour)
	pruned, err := (&commands.Pruner{Pool: f.d.Pool, Retention: commands.Retention{Events: time.Hour}}).Prune(f.ctx, nil)
	require.NoError(t, err)
	require.Positive(t, pruned.Events)
	var registrations int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT count(*) FROM outbox
		WHERE type IN ('pool.created', 'node.registered', 'gpu.registered', 'reservation.booked')`).Scan(&registrations))
	require.Zero(t, registrations, "every registration and booking was pruned")

	// Kept events of rows whose creation was pruned: an extension of the
	// live reservation p2, and a cordon of its node.
	_, err = f.h.ExtendReservation(f.ctx, tenantB, commands.ExtendReservation{ReservationID: rs["p2"].Reservation.ID,
		NewEnd: at(11)})
	require.NoError(t, err)
	_, err = f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n1"})
	require.NoError(t, err)
	f.catchUp(t)
	live := takeSnapshot(t, f.ctx, f.d.Q)

	for _, name := range []string{projections.NameFleet, projections.NameDeviceHolders} {
		_, err := projections.Rebuild(f.ctx, f.d.Pool, name)
		require.NoError(t, err, name)
	}
	nodes, err := f.d.Q.RmFleetNodeListAll(f.ctx)
	require.NoError(t, err)
	require.Len(t, nodes, 3, "every node, though its registration was pruned")
	holders, err := f.d.Q.RmDeviceHolderListAll(f.ctx)
	require.NoError(t, err)
	require.Len(t, holders, len(live.Holders), "every hold, though its booking was pruned")
	got := takeSnapshot(t, f.ctx, f.d.Q)
	require.Len(t, got.Pools, 1)
	require.Equal(t, live.Pools, got.Pools)
	require.Equal(t, live.Devices, got.Devices, "every GPU and atom, retired ones included")
	require.Equal(t, live.Allocations, got.Allocations)
	exact := 0
	for i, n := range got.Nodes {
		if n.UpdatedTxid == 0 { // its newest event was pruned
			require.Zero(t, n.UpdatedSeq, n.ID)
			require.Equal(t, n.RegisteredAt, n.UpdatedAt, n.ID)
			n.UpdatedAt, n.UpdatedTxid, n.UpdatedSeq = live.Nodes[i].UpdatedAt, live.Nodes[i].UpdatedTxid, live.Nodes[i].UpdatedSeq
			got.Nodes[i] = n
		} else {
			exact++
		}
	}
	require.Equal(t, 1, exact, "n1 was cordoned after the prune: when it was updated is known")
	require.Equal(t, live.Nodes, got.Nodes)
	exact = 0
	for i, h := range got.Holders {
		if h.UpdatedTxid == 0 {
			require.Zero(t, h.UpdatedSeq, h.DeviceID)
			h.UpdatedTxid, h.UpdatedSeq = live.Holders[i].UpdatedTxid, live.Holders[i].UpdatedSeq
			got.Holders[i] = h
		} else {
			exact++
		}
	}
	require.Equal(t, 2, exact, "p2's two GPUs: it was extended after the prune")
	require.Equal(t, live.Holders, got.Holders, "the holds, live, ended and withdrawn")

	// What GET /v1/nodes shows of n1: cordoned after the prune, holding p2.
	n1, err := f.d.Q.RmFleetNodeGet(f.ctx, "n1")
	require.NoError(t, err)
	require.True(t, n1.Cordoned)
	require.Equal(t, int64(1), n1.LiveReservations)
	for _, q := range readModelMismatches {
		require.Empty(t, mismatchesOf(t, f, q), "rebuilt read model against write model")
	}
}
