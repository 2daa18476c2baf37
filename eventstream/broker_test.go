package eventstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

// A stream with a cursor gets the history after it from the database and
// then live events, each once, in order. Reconnecting with the k-th event's
// position yields exactly the events after k: those appended while
// disconnected and those appended after reconnecting.
func TestStreamResumesAfterCursorWithoutGapOrRepeat(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := pgtest.New(t)
	want := appendN(t, d, "A", "x.made", 3)
	waitVisible(t, d, 3)
	b := eventstream.NewBroker(d.Pool, eventstream.BrokerOptions{})
	_, err := b.Poll(ctx) // the broker's head is now at event 3
	require.NoError(t, err)

	scope := eventstream.Scope{Tenant: "A"}
	s1, err := b.Subscribe(ctx, scope, &outbox.Position{})
	require.NoError(t, err)
	c1ctx, stop1 := context.WithCancel(ctx)
	c1 := deliver(c1ctx, s1, 0)
	want = append(want, appendN(t, d, "A", "x.made", 2)...)
	pollUntil(t, b, func() bool { return c1.count() == 5 })
	got := c1.events()
	require.Equal(t, want, idsOf(got), "history, then live")

	// Disconnect after k = 4 events were handled by the client.
	stop1()
	require.ErrorIs(t, <-c1.done, context.Canceled)
	s1.Close()
	require.Zero(t, b.Streams())
	k := got[3].Position

	want = append(want, appendN(t, d, "A", "x.made", 2)...) // while disconnected
	appendOne(t, d, "B", "x.made", "not A's")
	waitVisible(t, d, 8)
	_, err = b.Poll(ctx) // the broker moves on while A is away
	require.NoError(t, err)

	s2, err := b.Subscribe(ctx, scope, &k)
	require.NoError(t, err)
	require.Equal(t, k, s2.Start())
	defer s2.Close()
	c2 := deliver(ctx, s2, 0)
	want = append(want, appendN(t, d, "A", "x.made", 2)...) // after reconnecting
	pollUntil(t, b, func() bool { return c2.count() >= 5 })
	require.Equal(t, want[4:], idsOf(c2.events()), "exactly the events after k, in order")
}

// Streams subscribing at arbitrary moments while events are appended and
// the broker polls concurrently each receive every event exactly once, in
// log order: the switch from history to live has no gap and no repeat.
func TestStreamHistoryLiveSwitchUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := pgtest.New(t)
	const n = 40
	b := eventstream.NewBroker(d.Pool, eventstream.BrokerOptions{Batch: 3, CatchUpPage: 2, Buffer: 2 * n})

	var pollErr error
	polling := make(chan struct{})
	go func() {
		defer close(polling)
		for ctx.Err() == nil {
			if _, err := b.Poll(ctx); err != nil && ctx.Err() == nil {
				pollErr = err
				return
			}
		}
	}()

	var want []uuid.UUID
	var collectors []*collector
	for i := range n {
		id := appendOne(t, d, "A", "x.made", "e")
		want = append(want, id)
		if i%5 == 0 {
			s, err := b.Subscribe(ctx, eventstream.Scope{Tenant: "A"}, &outbox.Position{})
			require.NoError(t, err)
			t.Cleanup(s.Close)
			collectors = append(collectors, deliver(ctx, s, 0))
		}
	}
	for i, c := range collectors {
		require.Eventually(t, func() bool { return c.count() >= n }, waitFor, 2*time.Millisecond, "collector %d", i)
		require.Equal(t, want, idsOf(c.events()), "collector %d", i)
	}
	cancel()
	<-polling
	require.NoError(t, pollErr)
}

// A client that never reads fills its small buffer and is dropped; a fast
// client on the same broker keeps receiving everything. Memory per client
// is bounded by the buffer.
func TestSlowStreamIsDroppedFastStreamKeepsUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	b := eventstream.NewBroker(d.Pool, eventstream.BrokerOptions{Buffer: 2, Batch: 1})
	slow, err := b.Subscribe(ctx, operator, nil)
	require.NoError(t, err)
	defer slow.Close()
	fast, err := b.Subscribe(ctx, operator, nil)
	require.NoError(t, err)
	defer fast.Close()
	cf := deliver(ctx, fast, 0)

	var want []uuid.UUID
	for i := range 5 {
		want = append(want, appendOne(t, d, "A", "x.made", "e"))
		// One event per poll, and the fast client takes each before the
		// next: only the slow client's buffer fills.
		pollUntil(t, b, func() bool { return cf.count() == i+1 })
	}
	require.Equal(t, want, idsOf(cf.events()))
	require.Equal(t, 1, b.Streams(), "the slow stream was dropped")
	err = slow.Deliver(ctx, func(outbox.Stored) error { return nil }, 0, nil)
	require.ErrorIs(t, err, eventstream.ErrDropped)
}

// Scopes filter the live feed per stream: tenants see their own events,
// types filters apply, operators see everything.
func TestStreamScopesFilterLiveFeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	b := eventstream.NewBroker(d.Pool, eventstream.BrokerOptions{})
	sub := func(scope eventstream.Scope) *collector {
		s, err := b.Subscribe(ctx, scope, nil)
		require.NoError(t, err)
		t.Cleanup(s.Close)
		return deliver(ctx, s, 0)
	}
	a, bb := sub(eventstream.Scope{Tenant: "A"}), sub(eventstream.Scope{Tenant: "B"})
	aCreated := sub(eventstream.Scope{Tenant: "A", Types: []string{"x.created"}})
	ops := sub(operator)

	a1 := appendOne(t, d, "A", "x.created", "a1")
	b1 := appendOne(t, d, "B", "x.created", "b1")
	a2 := appendOne(t, d, "A", "x.deleted", "a2")
	sys := appendOne(t, d, "", "fleet.changed", "sys")
	pollUntil(t, b, func() bool { return ops.count() == 4 })
	require.Equal(t, []uuid.UUID{a1, a2}, idsOf(a.events()))
	require.Equal(t, []uuid.UUID{b1}, idsOf(bb.events()))
	require.Equal(t, []uuid.UUID{a1}, idsOf(aCreated.events()))
	require.Equal(t, []uuid.UUID{a1, b1, a2, sys}, idsOf(ops.events()))
}

// Idle streams get heartbeats; closing the broker ends every stream and
// refuses new ones.
func TestStreamHeartbeatAndBrokerClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	b := eventstream.NewBroker(d.Pool, eventstream.BrokerOptions{})
	s, err := b.Subscribe(ctx, operator, nil)
	require.NoError(t, err)
	defer s.Close()
	c := deliver(ctx, s, time.Millisecond)
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.idle >= 2
	}, waitFor, time.Millisecond)

	b.Close()
	require.ErrorIs(t, <-c.done, eventstream.ErrBrokerClosed)
	_, err = b.Subscribe(ctx, operator, nil)
	require.Equal(t, core.CodeUnavailable, core.CodeOf(err))
}

// Run wakes on pokes and polls on its own; when its context ends it
// closes every stream.
func TestRunDeliversAndClosesStreamsOnExit(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	b := eventstream.NewBroker(d.Pool, eventstream.BrokerOptions{})
	s, err := b.Subscribe(context.Background(), operator, nil)
	require.NoError(t, err)
	defer s.Close()
	c := deliver(context.Background(), s, 0)

	ctx, cancel := context.WithCancel(context.Background())
	pokes := make(chan struct{}, 1)
	ran := make(chan struct{})
	go func() { defer close(ran); b.Run(ctx, 10*time.Millisecond, pokes) }()
	id := appendOne(t, d, "A", "x.made", "e")
	pokes <- struct{}{}
	require.Eventually(t, func() bool { return c.count() == 1 }, waitFor, time.Millisecond)
	require.Equal(t, []uuid.UUID{id}, idsOf(c.events()))

	cancel()
	<-ran
	require.ErrorIs(t, <-c.done, eventstream.ErrBrokerClosed)
}

// An expired cursor is refused by Subscribe, before anything is streamed.
func TestSubscribeExpiredCursor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	appendN(t, d, "A", "x.made", 3)
	log := waitVisible(t, d, 3)
	_, err := d.Pool.Exec(ctx, "DELETE FROM outbox WHERE id = $1", log[0].ID)
	require.NoError(t, err)
	b := eventstream.NewBroker(d.Pool, eventstream.BrokerOptions{})
	_, err = b.Subscribe(ctx, operator, &log[0].Position)
	require.Equal(t, core.CodeCursorExpired, core.CodeOf(err))
	require.Zero(t, b.Streams(), "a refused stream is not left subscribed")
	s, err := b.Subscribe(ctx, operator, &log[1].Position)
	require.NoError(t, err)
	s.Close()
}
