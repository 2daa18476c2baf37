package outbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/outbox"
)

// The lag counts from the first observation at which the slowest sink was
// behind a visible event, not from the event's time, and ends when the
// sink passes it; no working sink means no lag.
func TestHandlingLag(t *testing.T) {
	t.Parallel()
	var l outbox.HandlingLag
	t0 := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	pos := func(tx uint64) outbox.Position { return outbox.Position{TxID: tx, Seq: int64(tx)} }

	require.Zero(t, l.Observe(at(0), pos(5), pos(5), true), "caught up")
	require.Zero(t, l.Observe(at(100), pos(8), pos(5), true), "behind since this observation only")
	require.Equal(t, 100*time.Millisecond, l.Observe(at(200), pos(9), pos(6), true), "still before the head seen at 100")
	require.Equal(t, 200*time.Millisecond, l.Observe(at(300), pos(9), pos(7), true))
	require.Equal(t, 200*time.Millisecond, l.Observe(at(400), pos(12), pos(8), true),
		"passed the head seen at 100: the one seen at 200 is the oldest not passed")
	require.Zero(t, l.Observe(at(500), pos(12), pos(12), true), "passed every head seen")
	require.Zero(t, l.Observe(at(600), pos(13), pos(12), true))
	require.Zero(t, l.Observe(at(700), pos(14), pos(0), false), "no sink works: nothing waits on one")
	require.Zero(t, l.Observe(at(800), pos(14), pos(12), true), "the marks went with the sinks")
	require.Equal(t, 100*time.Millisecond, l.Observe(at(900), pos(14), pos(13), true))
}
