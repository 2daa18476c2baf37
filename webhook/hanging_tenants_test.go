package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/webhook"
)

// hangingTenants gives each of n tenants (h1…hn) three endpoints at slow,
// marked failing (their last attempt failed), and two deliveries for each,
// then one delivery of a healthy tenant (acme) to fast, due last. Nothing
// is run.
func (f *fixture) hangingTenants(t *testing.T, n int, slow, fast string) {
	t.Helper()
	f.hangingTenantsFailing(t, n, slow, fast, true)
}

// hangingTenantsFailing is hangingTenants with endpoints that have not
// failed yet unless failing.
func (f *fixture) hangingTenantsFailing(t *testing.T, n int, slow, fast string, failing bool) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		actor := core.Actor{TokenID: fmt.Sprintf("tok_h%d", i), Tenant: fmt.Sprintf("h%d", i), Identity: "h", Role: core.RoleMember}
		var mine []string
		for j := range 3 {
			mine = append(mine, f.createEndpoint(t, actor, fmt.Sprintf("%s/h%d/%d", slow, i, j), "reservation.booked").ID)
		}
		if failing {
			_, err := f.pg.Pool.Exec(ctx, `UPDATE webhook_endpoints SET consecutive_failures = 1, failing_since = compute_now()
				WHERE id = ANY($1)`, mine)
			require.NoError(t, err)
		}
		for range 2 {
			ev := f.emit(t, actor.Tenant, "reservation.booked")
			for _, id := range mine {
				f.scheduled(t, id, ev)
			}
		}
	}
	f.pg.AdvanceSimClock(t, time.Millisecond) // the healthy delivery is due last
	healthy := f.createEndpoint(t, acmeMember, fast, "instance.failed")
	f.scheduled(t, healthy.ID, f.emit(t, "acme", "instance.failed"))
}

// Endpoints that hang in a few tenants must not hold up every other
// tenant's webhooks. The delivery pool has a fixed number of goroutines
// (COMPUTE_WEBHOOK_CONCURRENCY); a request in flight holds one, and so
// did a delivery of a failing endpoint waiting in the process for a slot
// (Config.SlotWait). Three tenants whose endpoints hang, each holding the
// two slots its failing share allows and two deliveries waiting, filled a
// pool of eight, and a healthy tenant's delivery waited for a waiter to
// give up (a minute here, 2 s by default, again and again); against a demo
// server with 20 hanging endpoints in each of 5 tenants, a healthy
// tenant's deliveries took 45 to 70 s. A failing endpoint's delivery now
// goes back to the queue instead of waiting.
func TestHangingTenantsDoNotHoldUpOtherTenants(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{
		MaxInflightPerTenant: 4, MaxInflightPerEndpoint: 2,
		SlotWait: time.Minute, Timeout: time.Minute, // what hangs stays for the whole test
	})
	slow := newGate(t)
	fast := newReceiver(t, respond{status: http.StatusOK})
	f.hangingTenants(t, 3, slow.URL, fast.URL)

	f.worker.Concurrency = 8
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.worker.Run(ctx, 20*time.Millisecond, nil) }()
	t.Cleanup(func() { slow.release(); cancel(); wg.Wait() })

	require.Eventually(t, func() bool { return len(fast.requests()) == 1 }, 10*time.Second, 5*time.Millisecond,
		"the healthy tenant's delivery is made while three tenants' endpoints hang")
	require.LessOrEqual(t, slow.held.Load(), int64(3*2), "each hanging tenant holds at most its failing share")
}

// A delivery of a failing endpoint that finds no slot comes back after at
// least half the request timeout, not within slotRetryMax (5 s): the
// endpoint's slots free only as its requests time out, and 630 deliveries
// of 60 hanging endpoints looking again every 2.5–5 s kept the delivery
// pool and the database busy with claims and slot checks that could not
// succeed, ahead of every other tenant's deliveries in the oldest-first
// queue (a healthy tenant's median delivery latency was 7 s).
func TestFailingEndpointsDeliveriesWaitOutTheTimeout(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{MaxInflightPerTenant: 4, MaxInflightPerEndpoint: 2, SlotWait: -1, Timeout: time.Minute})
	slow := newGate(t)
	fast := newReceiver(t, respond{status: http.StatusOK})
	f.hangingTenants(t, 1, slow.URL, fast.URL)
	ctx := context.Background()
	var deferred []uuid.UUID
	rows, err := f.pg.Pool.Query(ctx, `SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
		WHERE e.tenant_id = 'h0'`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	require.Len(t, ids, 6)

	ran := make(chan struct{})
	go func() { defer close(ran); _, _ = f.worker.RunOnce(ctx) }()
	t.Cleanup(func() { slow.release(); <-ran })
	// Two of the six hang (the failing share); the four others are put back.
	require.Eventually(t, func() bool {
		deferred = deferred[:0]
		now := f.pg.Now(t)
		for _, id := range ids {
			if nb := f.notBefore(t, id); nb.After(now) {
				deferred = append(deferred, id)
			}
		}
		return len(deferred) == 4 && slow.held.Load() == 2
	}, 10*time.Second, 5*time.Millisecond)
	now := f.pg.Now(t)
	for _, id := range deferred {
		require.GreaterOrEqual(t, f.notBefore(t, id).Sub(now), 25*time.Second,
			"a failing endpoint's delivery with no slot comes back after half the timeout or more")
	}
	require.Eventually(t, func() bool { return len(fast.requests()) == 1 }, 10*time.Second, 5*time.Millisecond,
		"the healthy tenant is delivered meanwhile")
}

// Until their first timeout, endpoints that hang have not failed: each of
// three such tenants held its four slots and its two deliveries waiting
// for a slot (SlotWait, a minute here) in a pool of sixteen, and a healthy
// tenant's delivery waited for a waiter to give up. In the demo probe the
// first minute of 20 new hanging endpoints per tenant held a healthy
// tenant's deliveries 5 to 24 s. A delivery no longer waits, and stops
// waiting, once every request of its full tenant in flight in the process
// has run for over a second.
func TestNewHangingEndpointsDoNotHoldUpOtherTenants(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{
		MaxInflightPerTenant: 4, MaxInflightPerEndpoint: 2,
		SlotWait: time.Minute, Timeout: time.Minute, // what hangs stays for the whole test
	})
	slow := newGate(t)
	fast := newReceiver(t, respond{status: http.StatusOK})
	f.hangingTenantsFailing(t, 3, slow.URL, fast.URL, false)

	f.worker.Concurrency = 16
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.worker.Run(ctx, 20*time.Millisecond, nil) }()
	t.Cleanup(func() { slow.release(); cancel(); wg.Wait() })

	require.Eventually(t, func() bool { return len(fast.requests()) == 1 }, 10*time.Second, 5*time.Millisecond,
		"the healthy tenant's delivery is made while three tenants' new endpoints hang")
	require.LessOrEqual(t, slow.held.Load(), int64(3*4), "each hanging tenant holds at most its cap")
}

// The tenant caps bound what one tenant's endpoints hold, not what several
// tenants' hold together: until its first timeout an endpoint that hangs
// has not failed, so each tenant whose new endpoints hang took its whole
// cap, and four such tenants (16 requests) filled a delivery pool of 12.
// A healthy tenant's delivery, to an endpoint that has answered before,
// then waited for their timeouts; against a demo server, five tenants with
// 20 new hanging endpoints each held another tenant's deliveries 23 to
// 32 s (median) for about two minutes. Requests to endpoints that are
// failing or have never answered now hold at most half the pool.
func TestNewHangingEndpointsOfManyTenantsLeaveHalfThePool(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{
		MaxInflightPerTenant: 4, MaxInflightPerEndpoint: 2, Concurrency: 12,
		Timeout: time.Minute, // what hangs stays for the whole test
	})
	slow := newGate(t)
	fast := newReceiver(t, respond{status: http.StatusOK})
	answered := newReceiver(t, respond{status: http.StatusOK})
	// acme's endpoint has answered before the others begin to hang.
	proven := f.createEndpoint(t, acmeMember, answered.URL, "instance.failed")
	f.scheduled(t, proven.ID, f.emit(t, "acme", "instance.failed"))
	f.runWorker(t)
	require.Len(t, answered.requests(), 1)
	f.hangingTenantsFailing(t, 4, slow.URL, fast.URL, false)

	f.worker.Concurrency = 12
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.worker.Run(ctx, 20*time.Millisecond, nil) }()
	t.Cleanup(func() { slow.release(); cancel(); wg.Wait() })

	require.Eventually(t, func() bool { return len(answered.requests()) == 2 }, 10*time.Second, 5*time.Millisecond,
		"the healthy tenant's delivery is made while four tenants' new endpoints hang")
	require.LessOrEqual(t, slow.held.Load(), int64(6), "requests that may hang hold at most half the pool")
}
