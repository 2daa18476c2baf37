package commands_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

// An activation takes its tenant's quota rows before it touches the
// reservation. It assigns the allocations in the same transaction, and so
// takes the node's generation (node_desired) after the reservation row; a
// preemption holds its victims' tenants' quota rows from its start, may
// hold that node's generation from ending an earlier victim, and then ends
// this reservation. Had the activation changed the reservation first, the
// two would wait for each other (CI's torture through PgBouncer saw that
// deadlock once). Here another transaction holds the tenant's quota rows,
// as a preemption would: the activation waits for them, and meanwhile the
// reservation row is free for the holder to take.
func TestActivationTakesQuotaBeforeTheReservation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	start, end := window(0, 2)
	res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end})
	require.Equal(t, core.ReservationBooked, res.Reservation.State)

	preemptor, err := f.d.Pool.Begin(f.ctx)
	require.NoError(t, err)
	defer func() { _ = preemptor.Rollback(f.ctx) }()
	_, err = preemptor.Exec(f.ctx, "SELECT 1 FROM quota_usage WHERE tenant_id = $1 ORDER BY resource FOR UPDATE", tenantA.Tenant)
	require.NoError(t, err)

	activated := make(chan error, 1)
	go func() { activated <- commandstest.Activate(f.ctx, f.h, res.Reservation.ID) }()
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
		   WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%QuotaUsageLockTenants%')`).Scan(&waiting))
		return waiting
	}, 20*time.Second, 5*time.Millisecond, "the activation waits for the tenant's quota rows")

	// The reservation row is not held: the preemptor takes it at once.
	_, err = preemptor.Exec(f.ctx, "SELECT 1 FROM reservations WHERE id = $1 FOR UPDATE NOWAIT", res.Reservation.ID)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
		t.Fatal("the activation locked the reservation before its tenant's quota rows")
	}
	require.NoError(t, err)

	require.NoError(t, preemptor.Rollback(f.ctx))
	require.NoError(t, <-activated)
	got, err := f.h.GetReservation(f.ctx, tenantA, res.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationActive, got.State)
}
