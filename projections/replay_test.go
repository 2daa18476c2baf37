package projections_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

// snapshot is every row of every read model, for row-by-row comparison.
type snapshot struct {
	Reservations []db.RmReservation
	Pools        []db.RmFleetPoolListAllRow
	Nodes        []db.RmFleetNodeListAllRow
	Devices      []db.RmFleetDeviceListAllRow
	Allocations  []db.RmFleetAllocation
	Holders      []db.RmDeviceHolderListAllRow
	Usage        []db.RmUsageAllocation
	Windows      []db.RmUsageWindow
}

func takeSnapshot(t *testing.T, ctx context.Context, q *db.Queries) snapshot {
	t.Helper()
	var s snapshot
	var err error
	s.Reservations, err = q.RmReservationListAll(ctx)
	require.NoError(t, err)
	s.Pools, err = q.RmFleetPoolListAll(ctx)
	require.NoError(t, err)
	s.Nodes, err = q.RmFleetNodeListAll(ctx)
	require.NoError(t, err)
	s.Devices, err = q.RmFleetDeviceListAll(ctx)
	require.NoError(t, err)
	s.Allocations, err = q.RmFleetAllocationListAll(ctx)
	require.NoError(t, err)
	s.Holders, err = q.RmDeviceHolderListAll(ctx)
	require.NoError(t, err)
	s.Usage, err = q.RmUsageAllocationListAll(ctx)
	require.NoError(t, err)
	s.Windows, err = q.RmUsageWindowListAll(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, s.Reservations)
	require.NotEmpty(t, s.Holders)
	require.NotEmpty(t, s.Windows)
	return s
}

// readLog reads the whole log (as far as it is visible).
func readLog(t *testing.T, f *fixture) []outbox.Stored {
	t.Helper()
	events, err := outbox.ReadAfter(f.ctx, f.d.Q, outbox.Position{}, 100000)
	require.NoError(t, err)
	require.NotEmpty(t, events)
	return events
}

// Applying the whole log again, twice, on top of read models that already
// reflect it changes nothing: every statement is guarded by version.
func TestReplayingABatchChangesNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.scenario(t)
	f.catchUp(t)
	before := takeSnapshot(t, f.ctx, f.d.Q)
	events := readLog(t, f)

	for range 2 {
		for _, p := range projections.All() {
			require.NoError(t, pgx.BeginFunc(f.ctx, f.d.Pool, func(tx pgx.Tx) error {
				return p.Apply(f.ctx, tx, events)
			}), p.ID())
		}
	}
	require.Equal(t, before, takeSnapshot(t, f.ctx, f.d.Q))

	// A prefix replayed after the whole (an older event arriving late)
	// changes nothing either.
	for _, p := range projections.All() {
		require.NoError(t, pgx.BeginFunc(f.ctx, f.d.Pool, func(tx pgx.Tx) error {
			return p.Apply(f.ctx, tx, events[:len(events)/2])
		}), p.ID())
	}
	require.Equal(t, before, takeSnapshot(t, f.ctx, f.d.Q))
}
