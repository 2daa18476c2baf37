package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/webhook"
)

// A worker that lost its shard lease while the receiver answered 2xx
// records nothing of the success: no attempt row, the delivery still
// pending with no attempt counted, the endpoint untouched, and the work
// item left, still claimed, for the shard's new holder to run again (at
// least once). Its in-flight slot is freed all the same.
func TestFencedWorkerRecordsNothingOnSuccess(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	var shard string
	rcv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		// The worker stalls past its lease; another process takes the shard.
		if _, err := f.pg.Q.SimClockAdvance(ctx, (lease.TTL + time.Second).Seconds()); err != nil {
			t.Errorf("advance the clock: %v", err)
		}
		if _, err := lease.AcquireMany(ctx, f.pg.Q, []string{shard}, "heir", lease.TTL); err != nil {
			t.Errorf("take the shard over: %v", err)
		}
		rw.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rcv.Close)
	ep := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked")
	d := f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked"))
	shard = workqueue.ShardLeaseName(workqueue.ShardOf(d.ID.String()))

	require.Equal(t, 1, f.runWorker(t))
	got := f.delivery(t, d.ID)
	require.Equal(t, webhook.StatePending, got.State, "the fenced success is not recorded")
	require.Zero(t, got.Attempts)
	attempts, err := f.svc.ListAttempts(ctx, acmeMember, ep.ID, "", 10)
	require.NoError(t, err)
	require.Empty(t, attempts.Items, "no attempt row")
	item, err := f.pg.Q.WorkQueueGet(ctx, db.WorkQueueGetParams{Kind: webhook.KindDeliver, Key: d.ID.String()})
	require.NoError(t, err, "the work item is not completed")
	require.Equal(t, "test-worker", *item.ClaimedBy, "nor rescheduled: the fence stops the worker's own bookkeeping too")
	counts, err := f.pg.Q.WebhookSlotCounts(ctx, db.WebhookSlotCountsParams{TenantID: "acme", EndpointID: ep.ID})
	require.NoError(t, err)
	require.Zero(t, counts.EndpointInflight, "the slot is freed")
}
