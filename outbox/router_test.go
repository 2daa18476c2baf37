package outbox_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

// A handler under MustDeliver is never skipped: an error is retried in
// place until it succeeds, a panic (turned into an error by the Router's
// Recoverer) Nacks and the same event comes again, and the cursor moves
// only past events the handler accepted, in log order. The Router times
// every handler run on the registry it was given.
func TestMustDeliverNeverSkips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	ids := appendEach(t, d, "must", 4)
	log := waitVisible(t, d, 4)

	reg := prometheus.NewRegistry()
	router, err := outbox.NewRouter(slog.New(slog.DiscardHandler), reg)
	require.NoError(t, err)
	sub := outbox.NewSubscriber("must", nil)
	sub.NackDelay = time.Millisecond
	var mu sync.Mutex
	attempts := map[string]int{}
	var accepted []string
	h := router.AddConsumerHandler("must", "must", sub, func(msg *message.Message) error {
		mu.Lock()
		defer mu.Unlock()
		attempts[msg.UUID]++
		switch {
		case msg.UUID == ids[1].String() && attempts[msg.UUID] <= 3:
			return errors.New("broker down")
		case msg.UUID == ids[2].String() && attempts[msg.UUID] == 1:
			panic("a bug, once")
		}
		accepted = append(accepted, msg.UUID)
		return nil
	})
	h.AddMiddleware(outbox.MustDeliver(time.Millisecond, 5*time.Millisecond, slog.New(slog.DiscardHandler)))
	startRouter(t, router)

	n, err := outbox.NewDispatcher(d.Pool, "w1", sub, nil).RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	mu.Lock()
	require.Equal(t, []string{ids[0].String(), ids[1].String(), ids[2].String(), ids[3].String()}, accepted)
	require.Equal(t, 4, attempts[ids[1].String()], "three failures retried in place")
	require.Equal(t, 2, attempts[ids[2].String()], "the panic Nacked and the event came again")
	mu.Unlock()
	cur, err := outbox.CursorOf(ctx, d.Q, "must")
	require.NoError(t, err)
	require.Equal(t, log[3].Position, cur)

	families, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	require.Contains(t, names, "compute_router_handler_execution_time_seconds")
}

// A handler under SkipAfter gives up on an event after its retries: the
// event goes to the poison topic, with the reason, and the sink moves on.
func TestSkipAfterParksThePoisonEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	ids := appendEach(t, d, "skip", 3)
	log := waitVisible(t, d, 3)

	poison := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	parked, err := poison.Subscribe(ctx, "poison")
	require.NoError(t, err)
	router, err := outbox.NewRouter(slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	sub := outbox.NewSubscriber("skip", nil)
	var mu sync.Mutex
	attempts := 0
	h := router.AddConsumerHandler("skip", "skip", sub, func(msg *message.Message) error {
		if msg.UUID != ids[1].String() {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		attempts++
		return errors.New("cannot handle this one")
	})
	mw, err := outbox.SkipAfter(2, time.Millisecond, poison, "poison")
	require.NoError(t, err)
	h.AddMiddleware(mw...)
	startRouter(t, router)

	n, err := outbox.NewDispatcher(d.Pool, "w1", sub, nil).RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	mu.Lock()
	require.Equal(t, 3, attempts, "one attempt and two retries")
	mu.Unlock()
	select {
	case msg := <-parked:
		require.Equal(t, ids[1].String(), msg.UUID)
		require.Equal(t, log[1].Position.String(), msg.Metadata.Get(outbox.MetadataPosition))
		require.Contains(t, msg.Metadata.Get("reason_poisoned"), "cannot handle this one")
		msg.Ack()
	case <-time.After(waitFor):
		t.Fatal("the poison event was not parked")
	}
	cur, err := outbox.CursorOf(ctx, d.Q, "skip")
	require.NoError(t, err)
	require.Equal(t, log[2].Position, cur, "the sink moved past the poison event")
}
