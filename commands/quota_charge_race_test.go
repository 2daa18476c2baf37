package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// A create that waits for a quota row another transaction is changing is
// charged against the row as that transaction left it, not against the
// snapshot its statement started with: raising the max (or a refund) that
// commits while the create waits lets it book. Without chargeAgain the
// create was refused QUOTA_EXCEEDED with a message whose own numbers left
// room ("1 used of 2, this needs 1 more"): with a real `compute serve`, an
// operator flipping acme's gpu max while 12 clients booked and released,
// 173 of 478 refusals in 40 s were of that kind.
func TestQuotaChargeSeesTheLockedRow(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	f.quota(t, "acme", "gpu", 1)
	f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})

	// The operator's raise, held open: the create's statement starts, and
	// takes its snapshot, while the row still says 1 used of 1.
	raise, err := f.d.Pool.Begin(f.ctx)
	require.NoError(t, err)
	defer func() { _ = raise.Rollback(f.ctx) }()
	_, err = raise.Exec(f.ctx, `UPDATE quota_usage SET max = 2, version = version + 1
	  WHERE tenant_id = $1 AND resource = 'gpu'`, tenantA.Tenant)
	require.NoError(t, err)

	created := make(chan error, 1)
	var second commands.ReservationResult
	go func() {
		s, e := window(0, 2)
		var err error
		second, err = f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, Start: s, End: e})
		created <- err
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
		   WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%QuotaUsageLockAndCharge%')`).Scan(&waiting))
		return waiting
	}, 20*time.Second, 5*time.Millisecond, "the create waits for the quota row")
	require.NoError(t, raise.Commit(f.ctx))

	select {
	case err = <-created:
	case <-time.After(20 * time.Second):
		t.Fatal("the create did not finish")
	}
	require.NoError(t, err, "the raised quota has room for the second GPU")
	require.Equal(t, core.ReservationBooked, second.Reservation.State)
	q, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota("acme", "gpu"))
	require.NoError(t, err)
	require.Equal(t, int64(2), q.Used)
	require.Equal(t, int64(2), q.Max)
}
