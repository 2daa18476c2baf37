package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// waitForLock waits until a statement whose text contains query waits for a
// lock in f's database.
func (f *fixture) waitForLock(t *testing.T, query string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
		   WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%')`, query).Scan(&waiting))
		return waiting
	}, 20*time.Second, 5*time.Millisecond, "%s waits for a lock", query)
}

// A quotas.set with IfVersion that starts while another operator's change
// of the same quota is uncommitted, at the version the first read, is
// refused CONFLICT once that change commits, and leaves the other's max:
// the version is compared on the row as the lock wait left it, in the
// guarded statement. A compare against a read taken before the wait (or a
// statement without the version in its guard) lets both writers win and
// the first raise is lost; with the version dropped from the statement's
// guard this test fails with "An error is expected but got nil".
func TestSetQuotaIfVersionSeesTheLockedRow(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.quota(t, "acme", "gpu", 4)
	before, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota("acme", "gpu"))
	require.NoError(t, err)

	// The other operator's raise to 6, made from the same version, held open.
	other, err := f.d.Pool.Begin(f.ctx)
	require.NoError(t, err)
	defer func() { _ = other.Rollback(f.ctx) }()
	_, err = other.Exec(f.ctx, `UPDATE quota_usage SET max = 6, version = version + 1
	  WHERE tenant_id = 'acme' AND resource = 'gpu' AND version = $1`, before.Version)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := f.h.SetQuota(f.ctx, operator, commands.SetQuota{Tenant: "acme", Resource: "gpu", Max: 8, IfVersion: before.Version})
		done <- err
	}()
	f.waitForLock(t, "QuotaUsageSetMax")
	require.NoError(t, other.Commit(f.ctx))

	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("quotas.set did not finish")
	}
	require.Error(t, err)
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "%v", err)
	after, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota("acme", "gpu"))
	require.NoError(t, err)
	require.Equal(t, int64(6), after.Max, "the other operator's raise stands")
	require.Equal(t, before.Version+1, after.Version)
}

// Two quotas.set with the same IfVersion at once: exactly one applies.
func TestSetQuotaIfVersionOneWriterWins(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.quota(t, "acme", "gpu", 4)
	before, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota("acme", "gpu"))
	require.NoError(t, err)
	type answer struct {
		max int64
		err error
	}
	answers := make(chan answer, 2)
	for _, max := range []int64{6, 8} {
		go func() {
			_, err := f.h.SetQuota(f.ctx, operator, commands.SetQuota{Tenant: "acme", Resource: "gpu", Max: max, IfVersion: before.Version})
			answers <- answer{max, err}
		}()
	}
	var won []int64
	for range 2 {
		a := <-answers
		if a.err == nil {
			won = append(won, a.max)
			continue
		}
		require.Equal(t, core.CodeConflict, core.CodeOf(a.err), "%v", a.err)
	}
	require.Len(t, won, 1)
	after, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota("acme", "gpu"))
	require.NoError(t, err)
	require.Equal(t, won[0], after.Max)
	require.Equal(t, before.Version+1, after.Version)
}
