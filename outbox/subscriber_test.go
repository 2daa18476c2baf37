package outbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

// startRouter runs r until the test ends and waits until it is running.
func startRouter(t *testing.T, r *message.Router) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		require.NoError(t, r.Run(context.Background()))
	}()
	<-r.Running()
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		<-done
	})
}

// Events reach watermill handlers as messages whose UUID is the event id and
// whose payload is the public envelope. The Router's middleware does its
// usual job: Recoverer turns a panic into an error, Retry runs the handler
// again, and PoisonQueue parks an event that keeps failing so the log moves
// on. The cursor is saved only when every message of the batch was acked.
func TestSubscriberFeedsRouterWithMiddleware(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	ids := appendEach(t, d, "m", 5)
	log := waitVisible(t, d, 5)

	poisonPub := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	poisoned, err := poisonPub.Subscribe(ctx, "outbox.poison")
	require.NoError(t, err)
	poison, err := middleware.PoisonQueue(poisonPub, "outbox.poison")
	require.NoError(t, err)

	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	require.NoError(t, err)
	router.AddMiddleware(poison, middleware.Retry{MaxRetries: 2, InitialInterval: time.Millisecond}.Middleware, middleware.Recoverer)

	sub := outbox.NewSubscriber("inproc", nil)
	var mu sync.Mutex
	var handled []outbox.Stored
	attempts := map[uuid.UUID]int{}
	router.AddConsumerHandler("audit", "inproc", sub, func(msg *message.Message) error {
		e, err := outbox.EventFromMessage(msg)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		attempts[e.ID]++
		switch {
		case e.ID == ids[1] && attempts[e.ID] == 1:
			panic("first attempt of event 1 panics")
		case e.ID == ids[3]:
			return errors.New("event 3 is poison")
		}
		handled = append(handled, e)
		return nil
	})
	startRouter(t, router)

	disp := outbox.NewDispatcher(d.Pool, "w1", sub, nil)
	n, err := disp.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 5, n)

	mu.Lock()
	require.Equal(t, []uuid.UUID{ids[0], ids[1], ids[2], ids[4]}, idsOf(handled), "in log order")
	require.Equal(t, 2, attempts[ids[1]], "the panic was recovered and retried")
	require.Equal(t, 3, attempts[ids[3]], "one attempt and two retries")
	want, got := log[2], handled[2]
	want.Time, got.Time = want.Time.UTC(), got.Time.UTC() // JSON keeps the instant, not the *time.Location
	require.JSONEq(t, string(want.Data), string(got.Data))
	want.Data, got.Data = nil, nil // JSON compacts the bytes
	require.Equal(t, want, got, "the envelope and position survive the trip")
	mu.Unlock()

	select {
	case msg := <-poisoned:
		require.Equal(t, ids[3].String(), msg.UUID)
		require.Equal(t, "test.happened", msg.Metadata.Get(outbox.MetadataType))
		require.Equal(t, log[3].Position.String(), msg.Metadata.Get(outbox.MetadataPosition))
		msg.Ack()
	case <-time.After(waitFor):
		t.Fatal("the poison event was not parked")
	}
	cur, err := outbox.CursorOf(ctx, d.Q, "inproc")
	require.NoError(t, err)
	require.Equal(t, log[4].Position, cur)
}

// A Nack (a handler error with no Retry or PoisonQueue to absorb it)
// redelivers the same event, same UUID, before anything after it.
func TestSubscriberRedeliversNackedEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	ids := appendEach(t, d, "n", 3)
	waitVisible(t, d, 3)

	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	require.NoError(t, err)
	sub := outbox.NewSubscriber("nacks", nil)
	sub.NackDelay = 0
	var mu sync.Mutex
	var seen []string
	failed := false
	router.AddConsumerHandler("h", "nacks", sub, func(msg *message.Message) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, msg.UUID)
		if msg.UUID == ids[1].String() && !failed {
			failed = true
			return errors.New("transient")
		}
		return nil
	})
	startRouter(t, router)

	n, err := outbox.NewDispatcher(d.Pool, "w1", sub, nil).RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{ids[0].String(), ids[1].String(), ids[1].String(), ids[2].String()}, seen)
}

// Closing the subscriber mid-batch (router shutdown) saves nothing: the
// batch is delivered again by whoever runs the sink next.
func TestSubscriberClosedMidBatchSavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	appendEach(t, d, "c", 2)
	waitVisible(t, d, 2)

	sub := outbox.NewSubscriber("closing", nil)
	msgs, err := sub.Subscribe(ctx, "closing")
	require.NoError(t, err)
	_, err = sub.Subscribe(ctx, "closing")
	require.Error(t, err, "one subscription per sink")

	result := make(chan error, 1)
	go func() {
		_, err := outbox.NewDispatcher(d.Pool, "w1", sub, nil).RunOnce(ctx)
		result <- err
	}()
	first := <-msgs
	require.NoError(t, sub.Close())
	first.Ack() // too late: the subscriber is closed
	require.ErrorIs(t, <-result, outbox.ErrSubscriberClosed)
	_, open := <-msgs
	require.False(t, open, "the output channel is closed")
	cur, err := outbox.CursorOf(ctx, d.Q, "closing")
	require.NoError(t, err)
	require.True(t, cur.IsZero())
}
