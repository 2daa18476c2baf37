package webhook_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/webhook"
)

// The scheduler's dispatcher, polling once an hour, schedules a delivery
// for a committed event promptly: the outbox listener's poke wakes it. A
// transaction another test package holds open can hide the event when the
// poke arrives (the frontier is cluster-wide); each further event pokes
// again, so the test emits until the delivery exists, never waiting for
// the poll.
func TestSchedulerWokenByPoke(t *testing.T) {
	t.Parallel()
	if os.Getenv("PGTEST_ADMIN_URL") != "" {
		t.Skip("through PgBouncer in transaction mode: no LISTEN, pokes are off and loops poll")
	}
	f := setup(t, webhook.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ep := f.createEndpoint(t, acmeMember, "http://127.0.0.1:1/hook")
	listener := outbox.NewListener(f.pg.URL, nil)
	pokes := listener.Subscribe()
	go listener.Run(ctx)
	first := f.emit(t, "acme", "reservation.booked")
	done := make(chan struct{})
	go func() { f.disp.Run(ctx, time.Hour, pokes); close(done) }()
	defer func() { cancel(); <-done }()

	// once the first event's delivery exists, the dispatcher's first pass
	// is over, and with an hour's poll only a poke can make it read again.
	await := func(ev core.Event) {
		t.Helper()
		require.Eventually(t, func() bool {
			_, err := f.pg.Q.WebhookDeliveryByEndpointEvent(context.Background(),
				db.WebhookDeliveryByEndpointEventParams{EndpointID: ep.ID, EventID: ev.ID})
			if err == nil {
				return true
			}
			f.emit(t, "globex", "filler") // another poke
			return false
		}, 20*time.Second, 5*time.Millisecond, "no poke woke the scheduler (poll is 1 h)")
	}
	await(first)
	await(f.emit(t, "acme", "reservation.booked"))
}
