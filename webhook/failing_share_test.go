package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/webhook"
)

// A tenant's endpoints that are failing take at most half of its in-flight
// slots, so that its endpoint that answers is not made to wait behind them.
// Three dead endpoints (failed before, now hanging) with two deliveries
// each, then one for the tenant's healthy endpoint: the healthy one is
// delivered while the dead ones hang. Before, the dead ones took all four
// of the tenant's slots and the healthy one waited for them to time out;
// against a demo server, 18 hanging endpoints of one tenant held its
// healthy endpoint's deliveries for 15 s to over 2 minutes.
func TestFailingEndpointsLeaveSlotsToTheTenantsOthers(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{MaxInflightPerTenant: 4, MaxInflightPerEndpoint: 2, SlotWait: -1})
	ctx := context.Background()
	slow := newGate(t)
	fast := newReceiver(t, respond{status: http.StatusOK})
	var dead []string
	for i := range 3 {
		dead = append(dead, f.createEndpoint(t, acmeMember, fmt.Sprintf("%s/%d", slow.URL, i), "reservation.booked").ID)
	}
	healthy := f.createEndpoint(t, acmeMember, fast.URL, "instance.failed")
	_, err := f.pg.Pool.Exec(ctx, `UPDATE webhook_endpoints SET consecutive_failures = 1, failing_since = compute_now()
		WHERE id = ANY($1)`, dead)
	require.NoError(t, err)
	// The healthy endpoint has answered before: one that never has is
	// suspect too, and shares the failing ones' half.
	_, err = f.pg.Pool.Exec(ctx, `UPDATE webhook_endpoints SET answered = true WHERE id = $1`, healthy.ID)
	require.NoError(t, err)
	for range 2 {
		ev := f.emit(t, "acme", "reservation.booked")
		for _, id := range dead {
			f.scheduled(t, id, ev)
		}
	}
	f.pg.AdvanceSimClock(t, time.Millisecond) // the healthy endpoint's delivery is claimed last
	hd := f.scheduled(t, healthy.ID, f.emit(t, "acme", "instance.failed"))

	ran := make(chan int, 1)
	go func() { n, _ := f.worker.RunOnce(ctx); ran <- n }()
	require.Eventually(t, func() bool { return len(fast.requests()) == 1 }, 10*time.Second, 5*time.Millisecond,
		"the tenant's healthy endpoint is delivered while its failing ones hang")
	// The slots are rows taken before each POST; the POSTs may still be on
	// their way to the receiver when the healthy one is in.
	var held int
	require.NoError(t, f.pg.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_inflight
		WHERE endpoint_id = ANY($1) AND until > compute_now()`, dead).Scan(&held))
	require.Equal(t, 2, held, "failing endpoints hold half the tenant's slots")
	require.Eventually(t, func() bool { return slow.held.Load() == 2 }, 10*time.Second, 5*time.Millisecond,
		"both of their requests hang at the receiver")
	slow.release()
	<-ran
	require.Equal(t, webhook.StateSucceeded, f.delivery(t, hd.ID).State)
}

// A tenant's endpoints that have never answered count with its failing
// ones for that half. Until its first timeout an endpoint that hangs has
// not failed, so three new ones took all four of the tenant's slots and
// its endpoint that had answered before waited behind them; as each new
// one failed, the next took its place, so with 20 of them the tenant's
// healthy endpoint got no slot until all had failed once.
func TestUnansweredEndpointsLeaveSlotsToTheTenantsOthers(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{MaxInflightPerTenant: 4, MaxInflightPerEndpoint: 2, SlotWait: -1, Timeout: time.Minute})
	ctx := context.Background()
	slow := newGate(t)
	fast := newReceiver(t, respond{status: http.StatusOK})
	healthy := f.createEndpoint(t, acmeMember, fast.URL, "instance.failed")
	f.scheduled(t, healthy.ID, f.emit(t, "acme", "instance.failed"))
	require.Equal(t, 1, f.runWorker(t))
	require.Len(t, fast.requests(), 1, "the healthy endpoint has answered")
	var fresh []string
	for i := range 3 {
		fresh = append(fresh, f.createEndpoint(t, acmeMember, fmt.Sprintf("%s/%d", slow.URL, i), "reservation.booked").ID)
	}
	for range 2 {
		ev := f.emit(t, "acme", "reservation.booked")
		for _, id := range fresh {
			f.scheduled(t, id, ev)
		}
	}
	f.pg.AdvanceSimClock(t, time.Millisecond) // the healthy endpoint's delivery is claimed last
	hd := f.scheduled(t, healthy.ID, f.emit(t, "acme", "instance.failed"))

	ran := make(chan int, 1)
	go func() { n, _ := f.worker.RunOnce(ctx); ran <- n }()
	t.Cleanup(func() { slow.release() })
	require.Eventually(t, func() bool { return len(fast.requests()) == 2 }, 10*time.Second, 5*time.Millisecond,
		"the tenant's healthy endpoint is delivered while its new ones hang")
	var held int
	require.NoError(t, f.pg.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_inflight
		WHERE endpoint_id = ANY($1) AND until > compute_now()`, fresh).Scan(&held))
	require.Equal(t, 2, held, "endpoints that have never answered hold half the tenant's slots")
	slow.release()
	<-ran
	require.Equal(t, webhook.StateSucceeded, f.delivery(t, hd.ID).State)
}
