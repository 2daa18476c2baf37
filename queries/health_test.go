package queries_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/queries"
)

// ClockNow is compute_now(): on the simulated clock it moves only when the
// test moves it.
func TestClockNow(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	q := queries.New(d.Pool)
	now, err := q.ClockNow(t.Context())
	require.NoError(t, err)
	require.Equal(t, d.Now(t), now)
	d.AdvanceSimClock(t, time.Hour)
	later, err := q.ClockNow(t.Context())
	require.NoError(t, err)
	require.Equal(t, now.Add(time.Hour), later)
}

// FrontierLag measures the age of the oldest open transaction against the
// clock it is given, never business time.
func TestFrontierLag(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	tx, err := d.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(t.Context()) }()
	_, err = tx.Exec(t.Context(), "SELECT pg_current_xact_id()")
	require.NoError(t, err)
	lag, err := queries.New(d.Pool).FrontierLag(t.Context(), func() time.Time { return time.Now().Add(time.Hour) })
	require.NoError(t, err)
	require.GreaterOrEqual(t, lag.Age, time.Hour-time.Minute)
	require.NotEmpty(t, lag.Holder)
}
