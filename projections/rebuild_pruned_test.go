package projections_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/projections"
)

// A rebuild after retention pruned the registrations of every node, GPU
// and pool, and the creation and bookings of every reservation, still has
// them all: fleet, device-holders and reservations start from the write
// model (Seeder), and the events kept after the prune apply on top. The
// rebuilt tables equal the live ones, save for where a row was written
// when that event was pruned: position 0 (and for a node its registration
// time), for a reservation (its creation txid, 0); the list of
// reservations keeps its order, and its cursors taken before the rebuild
// neither skip nor repeat one.
func TestRebuildAfterPruningKeepsTheFleetHoldsAndReservations(t *testing.T) {
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
	// live reservation p2, and a cordon of its node; then a reservation
	// created after the prune, asking for no GPU (on n3).
	_, err = f.h.ExtendReservation(f.ctx, tenantB, commands.ExtendReservation{ReservationID: rs["p2"].Reservation.ID,
		NewEnd: at(11)})
	require.NoError(t, err)
	_, err = f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n1"})
	require.NoError(t, err)
	cpu := f.reserve(t, tenantA, commands.CreateReservation{VCPU: 2, Tolerations: []string{"maintenance"},
		Start: at(8), End: at(9)})
	f.catchUp(t)
	live := takeSnapshot(t, f.ctx, f.d.Q)
	liveList := listReservations(t, f, 0, 0)
	require.Len(t, liveList, len(live.Reservations))

	for _, name := range []string{projections.NameFleet, projections.NameDeviceHolders, projections.NameReservations} {
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
	requireReadModelsAgree(t, f, "rebuilt")

	// Every reservation, as live, in the live order, and paging from any
	// cursor handed out before the rebuild goes on with the same rows.
	exact = requireRebuiltReservations(t, f, live.Reservations, liveList, got.Reservations)
	require.Equal(t, 2, exact, "late, whose creation is the newest event the prune kept, and the one created after it")
	rebuilt, err := f.d.Q.RmReservationGet(f.ctx, rs["p2"].Reservation.ID)
	require.NoError(t, err)
	require.NotZero(t, rebuilt.UpdatedSeq, "p2 was extended after the prune: where it was updated is known")
	rebuilt, err = f.d.Q.RmReservationGet(f.ctx, cpu.Reservation.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"gpu":{"count":0,"kind":""},"vcpu":2,"memoryMb":0,"diskGb":0,"tolerations":["maintenance"]}`,
		string(rebuilt.Spec))
}

// listReservations is the list of reservations (RmReservationList, all
// tenants) after the cursor (txid, seq).
func listReservations(t *testing.T, f *fixture, txid uint64, seq int64) []string {
	t.Helper()
	rows, err := f.d.Q.RmReservationList(f.ctx, db.RmReservationListParams{AfterTxid: txid, AfterSeq: seq, MaxRows: 10000})
	require.NoError(t, err)
	ids := []string{}
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	return ids
}

// requireRebuiltReservations checks rm_reservations rebuilt from a pruned
// log against the live table (both in id order) and the live list
// (liveList, in list order): every row is there as live, save for the
// position of a creating event that was pruned, which is (its txid, 0),
// and the position of an update that was pruned, which is that too; the
// list has the live order, and a cursor at any live row's position
// continues with the rows after it. It returns how many rows kept their
// creating event's position.
func requireRebuiltReservations(t *testing.T, f *fixture, live []db.RmReservation, liveList []string, got []db.RmReservation) int {
	t.Helper()
	require.Len(t, got, len(live), "every reservation, though its creation was pruned")
	exact := 0
	for i, r := range got {
		l := live[i]
		require.Equal(t, l.ID, r.ID)
		require.Equal(t, l.CreatedTxid, r.CreatedTxid, "%s: created in the same transaction", r.ID)
		if r.CreatedSeq == l.CreatedSeq {
			exact++
		} else {
			require.Zero(t, r.CreatedSeq, r.ID)
			r.CreatedSeq = l.CreatedSeq
		}
		if r.UpdatedTxid != l.UpdatedTxid || r.UpdatedSeq != l.UpdatedSeq {
			require.Equal(t, [2]any{r.CreatedTxid, int64(0)}, [2]any{r.UpdatedTxid, r.UpdatedSeq},
				"%s: its update was pruned", r.ID)
			r.UpdatedTxid, r.UpdatedSeq = l.UpdatedTxid, l.UpdatedSeq
		}
		require.Equal(t, l, r, "%s: as live", r.ID)
	}
	require.Equal(t, liveList, listReservations(t, f, 0, 0), "the list keeps its order")
	for i, id := range liveList {
		l := live[slices.IndexFunc(live, func(r db.RmReservation) bool { return r.ID == id })]
		require.Equal(t, liveList[i+1:], listReservations(t, f, l.CreatedTxid, l.CreatedSeq),
			"after a cursor at %s, taken before the rebuild", id)
	}
	return exact
}
