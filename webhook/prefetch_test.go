package webhook_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/webhook"
)

// Prefetch reads a claim's deliveries in one statement and takes the slot
// of each that may be attempted now, and of no other: not of a delivery
// woken before its time, nor of one whose endpoint was disabled. Each
// delivery then runs as it would have on its own read.
func TestPrefetchTakesSlotsOnlyForDeliveriesDueNow(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	rcv := newReceiver(t, respond{status: http.StatusOK})
	due := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked")
	early := f.createEndpoint(t, acmeMember, rcv.URL+"/early", "reservation.booked")
	off := f.createEndpoint(t, acmeMember, rcv.URL+"/off", "reservation.booked")
	ev := f.emit(t, "acme", "reservation.booked")
	dDue, dEarly, dOff := f.scheduled(t, due.ID, ev), f.scheduled(t, early.ID, ev), f.scheduled(t, off.ID, ev)
	_, err := f.pg.Pool.Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = compute_now() + interval '1 minute' WHERE id = $1`, dEarly.ID)
	require.NoError(t, err)
	disabled := false
	_, err = f.svc.PatchEndpoint(ctx, acmeMember, off.ID, webhook.PatchEndpoint{Enabled: &disabled})
	require.NoError(t, err)

	slots := map[string]int32{}
	f.worker.HandlePrefetch(webhook.KindDeliver, func(ctx context.Context, items []workqueue.Item) error {
		err := f.svc.Prefetch(ctx, items)
		for _, ep := range []string{due.ID, early.ID, off.ID} {
			c, cerr := f.pg.Q.WebhookSlotCounts(ctx, db.WebhookSlotCountsParams{TenantID: "acme", EndpointID: ep})
			require.NoError(t, cerr)
			slots[ep] = c.EndpointInflight
		}
		return err
	})
	require.Equal(t, 3, f.runWorker(t), "one claim")
	require.Equal(t, map[string]int32{due.ID: 1, early.ID: 0, off.ID: 0}, slots, "a slot for the delivery due now only")

	require.Equal(t, webhook.StateSucceeded, f.delivery(t, dDue.ID).State)
	require.Equal(t, webhook.StatePending, f.delivery(t, dEarly.ID).State)
	require.Zero(t, f.delivery(t, dEarly.ID).Attempts)
	require.Equal(t, f.pg.Now(t).Add(time.Minute), f.notBefore(t, dEarly.ID), "woken early, the schedule stands")
	require.Equal(t, webhook.StateAbandoned, f.delivery(t, dOff.ID).State)
	require.Len(t, rcv.requests(), 1)
	c, err := f.pg.Q.WebhookSlotCounts(ctx, db.WebhookSlotCountsParams{TenantID: "acme", EndpointID: due.ID})
	require.NoError(t, err)
	require.Zero(t, c.TenantInflight, "every slot is freed")
}
