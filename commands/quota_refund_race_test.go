package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
)

// A release whose refund (QuotaUsageLockAndRefund) waits for a quota row
// another transaction is changing refunds against the row as that
// transaction left it, not against the snapshot its statement began with:
// a charge that commits while the refund waits is kept (1 used, not 0),
// and so is a max lowered meanwhile (1, not the 2 the snapshot had).
//
// The charge's statement had that bug (chargeAgain): its guard is read on
// the pre-lock snapshot and a row failing it there is never read again.
// The refund's guard (used - n >= 0) cannot fail that way while used is
// the sum of the live charges, its own among them, since that charge
// committed before the release began; what is left to get wrong is the
// new row's value. PostgreSQL's UPDATE recomputes it from the newest row
// version after the wait (READ COMMITTED's recheck), which this test holds
// it to: computing the refund from a read of the statement's snapshot (a
// CTE selecting used, then SET used = that - n) fails "a charge" with used
// 0: the charge lost. "a max change" guards the other half of the row: a
// refund that rebuilt the row from its snapshot would put max back to 2.
func TestQuotaRefundSeesTheLockedRow(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		change    string // what the other transaction does to acme's gpu row
		used, max int64  // the row after both
	}{
		"a charge":     {`UPDATE quota_usage SET used = used + 1 WHERE tenant_id = 'acme' AND resource = 'gpu'`, 1, 2},
		"a max change": {`UPDATE quota_usage SET max = 1, version = version + 1 WHERE tenant_id = 'acme' AND resource = 'gpu'`, 0, 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.node(t, "n1", exclusive, exclusive)
			f.quota(t, "acme", "gpu", 2)
			r := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation

			other, err := f.d.Pool.Begin(f.ctx)
			require.NoError(t, err)
			defer func() { _ = other.Rollback(f.ctx) }()
			_, err = other.Exec(f.ctx, tc.change)
			require.NoError(t, err)

			released := make(chan error, 1)
			go func() {
				_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: r.ID})
				released <- err
			}()
			f.waitForLock(t, "QuotaUsageLockAndRefund")
			require.NoError(t, other.Commit(f.ctx))

			select {
			case err = <-released:
			case <-time.After(20 * time.Second):
				t.Fatal("the release did not finish")
			}
			require.NoError(t, err)
			q, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota("acme", "gpu"))
			require.NoError(t, err)
			require.Equal(t, tc.used, q.Used, "used after the refund")
			require.Equal(t, tc.max, q.Max, "max after the refund")
		})
	}
}
