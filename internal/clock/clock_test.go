package clock

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/testenv"
)

func TestClockFollowsDatabaseAndReportsSkew(t *testing.T) {
	var logs bytes.Buffer
	c := New(slog.New(slog.NewTextHandler(&logs, nil)))
	local := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.local = func() time.Time { return local }

	db := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, time.Duration(0), c.Anchor(db), "the first anchor has nothing to drift from")
	require.Equal(t, db, c.Now())

	local = local.Add(10 * time.Second)
	require.Equal(t, db.Add(10*time.Second), c.Now(), "between anchors the clock moves with the process")

	// The database moved only 9.5 s: the process ran 0.5 s ahead, under MaxSkew.
	require.Equal(t, 500*time.Millisecond, c.Anchor(db.Add(9500*time.Millisecond)))
	require.NotContains(t, logs.String(), "ClockSkew")

	// The database jumped an hour (a simulated clock advanced, or a real skew).
	require.Equal(t, -time.Hour, c.Anchor(db.Add(9500*time.Millisecond+time.Hour)))
	require.Contains(t, logs.String(), "ClockSkew")
	require.Equal(t, -time.Hour, c.Skew())
	require.Equal(t, db.Add(9500*time.Millisecond+time.Hour), c.Now())
}

// fakeSource is a compute_now() the test moves.
type fakeSource struct{ now atomic.Int64 }

func (f *fakeSource) ClockNow(context.Context) (time.Time, error) {
	return time.Unix(0, f.now.Load()).UTC(), nil
}

// Run keeps re-anchoring: after the database's time jumps (a simulated
// clock advanced, or the process's clock stepped), the clock follows it
// at the next period without anything else sampling it.
func TestRunReanchorsPeriodically(t *testing.T) {
	c := New(slog.New(slog.DiscardHandler))
	local := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.local = func() time.Time { return local }
	src := &fakeSource{}
	db := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	src.now.Store(db.UnixNano())
	_, err := c.Sample(context.Background(), src)
	require.NoError(t, err)
	require.Equal(t, db, c.Now())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, src, time.Millisecond) }()
	defer func() { cancel(); <-done }()

	jumped := db.Add(time.Hour)
	src.now.Store(jumped.UnixNano())
	require.Eventually(t, func() bool { return c.Now().Equal(jumped) }, 10*time.Second, time.Millisecond,
		"the clock is re-anchored to the database's time")
}

// outageSource is a compute_now() that fails while down is set.
type outageSource struct{ down atomic.Bool }

func (s *outageSource) ClockNow(context.Context) (time.Time, error) {
	if s.down.Load() {
		return time.Time{}, errors.New("database unavailable")
	}
	return time.Now(), nil
}

// A database outage is a line as it starts and one as it ends in the
// clock's log, not one per re-anchoring (every 5 s, in every process).
func TestRunLogsAnOutageOnceNotEverySample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out testenv.LogBuffer
		c := New(slog.New(slog.NewJSONHandler(&out, nil)))
		src := &outageSource{}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); c.Run(ctx, src, AnchorEvery) }()

		src.down.Store(true)
		time.Sleep(50 * time.Second) // the simulated clock: ten samples fail
		synctest.Wait()
		src.down.Store(false)
		time.Sleep(AnchorEvery)
		synctest.Wait()
		cancel()
		<-done

		require.Equal(t, []string{
			"WARN clock: re-anchor to compute_now()",
			"INFO clock: re-anchor to compute_now(): recovered",
		}, out.LevelsAndMessages(t))
	})
}
