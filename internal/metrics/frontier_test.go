package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/metrics"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// A transaction with an xid held open hides every event committed after
// it started from every sink: their lag reads 0 (nothing visible is
// undelivered) while nothing moves. compute_outbox_frontier_lag_seconds
// says how long the oldest such transaction has been open, so an alert
// can fire on it; before, only an operator's /readyz showed it. The wall
// clock is set to 42 s after the held transaction began: the figure is at
// least that (another test package's transaction may be older still; the
// frontier is cluster-wide).
func TestDomainReportsTheFrontierHeldBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)

	holder, err := d.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(ctx) }()
	var began time.Time
	require.NoError(t, holder.QueryRow(ctx, `SELECT xact_start FROM pg_stat_activity WHERE pid = pg_backend_pid()`).Scan(&began))
	_, err = holder.Exec(ctx, `SELECT txid_current()`) // takes an xid: holds the frontier
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDomain(d.Pool, metrics.DomainOptions{
		CacheFor: time.Nanosecond, WallClock: func() time.Time { return began.Add(42 * time.Second) },
	}))
	lag, ok := series(t, reg)[metrics.NameOutboxFrontierLag]
	require.True(t, ok, "%s is exported", metrics.NameOutboxFrontierLag)
	require.GreaterOrEqual(t, lag, 42.0, "the held transaction is 42 s old by the wall clock given")
}
