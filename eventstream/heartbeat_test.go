package eventstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/eventstream/eventstreamtest"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// A heartbeat follows only a stretch of silence: a stream whose events
// come more often than the interval gets none (it used to get one every
// interval however busy it was), and one whose own events stay quiet gets
// it once the interval passes with nothing sent, with the head of the
// whole log as its resume point, even while other tenants' events flow.
func TestStreamHeartbeatOnlyWhenIdle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	const every = 15 * time.Second
	newTimer, started := eventstreamtest.ManualTimers()
	b := eventstream.NewBroker(d.Pool, eventstream.BrokerOptions{IdleTimer: newTimer})
	busy, err := b.Subscribe(ctx, eventstream.Scope{Tenant: "A"}, nil)
	require.NoError(t, err)
	defer busy.Close()
	quiet, err := b.Subscribe(ctx, eventstream.Scope{Tenant: "B"}, nil)
	require.NoError(t, err)
	defer quiet.Close()
	cb := deliver(ctx, busy, every)
	tb := <-started
	cq := deliver(ctx, quiet, every)
	tq := <-started

	// Five of A's events, one every 10 s: 50 s without a heartbeat for A.
	// B, quiet all along, gets one at 20 s (due at 15 s) and one at 40 s
	// (15 s after the first restarted its wait), each with the head of the
	// whole log as its resume point.
	for i := range 5 {
		appendOne(t, d, "A", "x.made", "busy")
		pollUntil(t, b, func() bool { return cb.count() == i+1 })
		require.Eventually(t, func() bool { return tb.Resets() == i+1 }, waitFor, time.Millisecond,
			"event %d was sent, but the wait for the heartbeat did not start again", i+1)
		tb.Advance(10 * time.Second)
		tq.Advance(10 * time.Second)
		if i == 1 || i == 3 {
			beats := (i + 1) / 2
			require.Eventually(t, func() bool { return tq.Resets() == beats }, waitFor, time.Millisecond)
			n, resume := cq.idles()
			require.Equal(t, beats, n, "B's heartbeats after %d s of silence", (i+1)*10)
			require.Equal(t, cb.events()[i].Position, resume, "B's heartbeat id follows the whole log")
		}
	}
	n, _ := cb.idles()
	require.Zero(t, n, "a heartbeat on a stream whose events came every 10 s")
	require.Zero(t, cq.count())

	// A falls quiet: 15 s after its last event, its first heartbeat.
	tb.Advance(5 * time.Second)
	require.Eventually(t, func() bool { n, _ := cb.idles(); return n == 1 }, waitFor, time.Millisecond)
	_, resume := cb.idles()
	require.Equal(t, cb.events()[4].Position, resume)
}
