package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/webhook"
)

// gate is a receiver that holds every request until the test opens it,
// and counts the requests it holds.
type gate struct {
	*httptest.Server
	open     chan struct{}
	held     atomic.Int64
	received atomic.Int64
	once     sync.Once
}

func newGate(t *testing.T) *gate {
	t.Helper()
	g := &gate{open: make(chan struct{})}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.received.Add(1)
		g.held.Add(1)
		defer g.held.Add(-1)
		select {
		case <-g.open:
			w.WriteHeader(http.StatusNoContent)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { g.release(); g.Server.Close() })
	return g
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// A tenant cannot register more than MaxEndpoints endpoints, however many
// creates race: the cap is the database's, not a count in Go.
func TestEndpointCapPerTenant(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{MaxEndpoints: 3})
	ctx := context.Background()
	var ids []string
	for i := range 3 {
		ids = append(ids, f.createEndpoint(t, acmeMember, fmt.Sprintf("https://hooks.acme.example/%d", i)).ID)
	}
	_, err := f.svc.CreateEndpoint(ctx, acmeMember, webhook.CreateEndpoint{URL: "https://hooks.acme.example/4"})
	require.Equal(t, core.CodeQuotaExceeded, core.CodeOf(err))
	require.Contains(t, err.Error(), "3 webhook endpoints")
	_, err = f.svc.CreateEndpoint(ctx, operator, webhook.CreateEndpoint{Tenant: "acme", URL: "https://hooks.acme.example/4"})
	require.Equal(t, core.CodeQuotaExceeded, core.CodeOf(err), "operators are held to the tenant's cap too")
	f.createEndpoint(t, globexMember, "https://hooks.globex.example/") // another tenant's cap is its own

	_, err = f.svc.DeleteEndpoint(ctx, acmeMember, ids[0])
	require.NoError(t, err)
	f.createEndpoint(t, acmeMember, "https://hooks.acme.example/5")

	// Twelve creates at once for a tenant with room for three: three win.
	// An operator names an existing tenant (issuing it a token creates it).
	require.NoError(t, f.pg.Q.TenantEnsure(ctx, "initech"))
	var wins, quota atomic.Int64
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.svc.CreateEndpoint(ctx, operator, webhook.CreateEndpoint{Tenant: "initech", URL: fmt.Sprintf("https://hooks.initech.example/%d", i)})
			switch core.CodeOf(err) {
			case core.CodeQuotaExceeded:
				quota.Add(1)
			default:
				if err == nil {
					wins.Add(1)
				} else {
					t.Errorf("create: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 3, wins.Load())
	require.EqualValues(t, 9, quota.Load())
	n, err := f.pg.Q.WebhookEndpointCount(ctx, "initech")
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
}

// At most MaxInflightPerTenant attempts of a tenant and MaxInflightPerEndpoint
// of an endpoint are in flight; the others are put back with a short delay,
// keep their attempt count, and are delivered once slots free. Another
// tenant's delivery goes through meanwhile.
func TestInflightCapsDeferWithoutSpendingAttempts(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{MaxInflightPerTenant: 3, MaxInflightPerEndpoint: 2, SlotWait: -1})
	ctx := context.Background()
	slow := newGate(t)
	fast := newReceiver(t, respond{status: http.StatusOK})
	a1 := f.createEndpoint(t, acmeMember, slow.URL+"/1", "reservation.booked")
	a2 := f.createEndpoint(t, acmeMember, slow.URL+"/2", "reservation.booked")
	g := f.createEndpoint(t, globexMember, fast.URL, "reservation.booked")
	// acme's endpoints have answered before: the caps, not the suspect
	// half of the tenant's slots (one of three), are what is measured.
	_, err := f.pg.Pool.Exec(ctx, `UPDATE webhook_endpoints SET answered = true WHERE id = ANY($1)`, []string{a1.ID, a2.ID})
	require.NoError(t, err)
	var acme []db.WebhookDelivery
	for range 3 {
		ev := f.emit(t, "acme", "reservation.booked")
		acme = append(acme, f.scheduled(t, a1.ID, ev), f.scheduled(t, a2.ID, ev))
	}
	gd := f.scheduled(t, g.ID, f.emit(t, "globex", "reservation.booked"))
	t0 := f.pg.Now(t)

	ran := make(chan int, 1)
	go func() { n, _ := f.worker.RunOnce(ctx); ran <- n }()
	require.Eventually(t, func() bool { return slow.held.Load() == 3 }, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return len(fast.requests()) == 1 }, 10*time.Second, 5*time.Millisecond,
		"globex is delivered while acme has its cap in flight")
	counts, err := f.pg.Q.WebhookSlotCounts(ctx, db.WebhookSlotCountsParams{TenantID: "acme", EndpointID: a1.ID})
	require.NoError(t, err)
	require.EqualValues(t, 3, counts.TenantInflight)
	require.LessOrEqual(t, counts.EndpointInflight, int32(2))
	// The three without a slot are put back, shortly, before the held
	// ones finish.
	require.Eventually(t, func() bool {
		n := 0
		for _, d := range acme {
			if nb := f.notBefore(t, d.ID); nb.After(t0) && !nb.After(t0.Add(5*time.Second)) {
				n++
			}
		}
		return n == 3
	}, 10*time.Second, 5*time.Millisecond)

	slow.release()
	require.Equal(t, 7, <-ran)
	require.Equal(t, webhook.StateSucceeded, f.delivery(t, gd.ID).State)
	var done, waiting int
	for _, d := range acme {
		got := f.delivery(t, d.ID)
		switch got.State {
		case webhook.StateSucceeded:
			done++
			require.EqualValues(t, 1, got.Attempts)
		case webhook.StatePending:
			waiting++
			require.EqualValues(t, 0, got.Attempts, "a deferral is not an attempt")
		}
	}
	require.Equal(t, 3, done)
	require.Equal(t, 3, waiting)
	counts, err = f.pg.Q.WebhookSlotCounts(ctx, db.WebhookSlotCountsParams{TenantID: "acme", EndpointID: a1.ID})
	require.NoError(t, err)
	require.Zero(t, counts.TenantInflight, "recording an attempt frees its slot")

	f.pg.AdvanceSimClock(t, 5*time.Second)
	require.Equal(t, 3, f.runWorker(t))
	for _, d := range acme {
		require.Equal(t, webhook.StateSucceeded, f.delivery(t, d.ID).State)
	}
	require.EqualValues(t, 6, slow.received.Load(), "each delivery was attempted exactly once")
}

// A delivery that finds its endpoint's cap full waits in the process for
// the slot a finishing attempt frees, instead of being put back: with one
// slot, three deliveries of one run all go through, one after another.
func TestWaitingRoomHandsFreedSlotsOn(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{MaxInflightPerEndpoint: 1})
	rcv := newReceiver(t, respond{status: http.StatusOK})
	ep := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked")
	var ds []db.WebhookDelivery
	for range 3 {
		ds = append(ds, f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked")))
	}
	require.Equal(t, 3, f.runWorker(t))
	for _, d := range ds {
		got := f.delivery(t, d.ID)
		require.Equal(t, webhook.StateSucceeded, got.State)
		require.EqualValues(t, 1, got.Attempts)
	}
	require.Len(t, rcv.requests(), 3)
}

// After BreakerThreshold failures in a row the endpoint's breaker opens:
// its deliveries wait out the cool-down without attempts, a failure after
// it re-opens it for twice as long (up to BreakerMaxCooldown), and a
// success closes it.
func TestCircuitBreakerDefersAFailingEndpoint(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{MaxInflightPerEndpoint: 10, MaxInflightPerTenant: 10, BreakerMaxCooldown: 3 * time.Minute})
	f.worker.Concurrency = 1 // one attempt at a time, so which one trips the breaker is certain
	ctx := context.Background()
	script := make([]respond, 0, 8)
	for range 7 {
		script = append(script, respond{status: http.StatusInternalServerError})
	}
	rcv := newReceiver(t, append(script, respond{status: http.StatusOK})...)
	ep := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked")
	var ds []db.WebhookDelivery
	for range 5 {
		ds = append(ds, f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked")))
	}
	breaker := func() webhook.Endpoint {
		e, err := f.svc.GetEndpoint(ctx, acmeMember, ep.ID)
		require.NoError(t, err)
		return e
	}
	t0 := f.pg.Now(t)

	require.Equal(t, 5, f.runWorker(t))
	require.Len(t, rcv.requests(), 5)
	e := breaker()
	require.EqualValues(t, 5, e.ConsecutiveFailures)
	require.NotNil(t, e.CircuitOpenUntil)
	require.True(t, t0.Add(time.Minute).Equal(*e.CircuitOpenUntil), "open for the first cool-down: %s", e.CircuitOpenUntil)

	// The retries come due at +5 s and are deferred to the end of the
	// cool-down: no request, no attempt.
	f.pg.AdvanceSimClock(t, 5*time.Second)
	require.Equal(t, 5, f.runWorker(t))
	require.Len(t, rcv.requests(), 5)
	for _, d := range ds {
		require.EqualValues(t, 1, f.delivery(t, d.ID).Attempts)
		require.Equal(t, t0.Add(time.Minute), f.notBefore(t, d.ID))
	}

	// The cool-down is over: the first attempt fails and re-opens the
	// breaker for twice as long; the others wait again.
	t1 := f.pg.AdvanceSimClock(t, 55*time.Second)
	f.runWorker(t)
	require.Len(t, rcv.requests(), 6)
	e = breaker()
	require.True(t, t1.Add(2*time.Minute).Equal(*e.CircuitOpenUntil), "doubled: %s", e.CircuitOpenUntil)

	// Again: doubling would be 4 min, BreakerMaxCooldown caps it at 3.
	t2 := f.pg.AdvanceSimClock(t, 2*time.Minute)
	f.runWorker(t)
	require.Len(t, rcv.requests(), 7)
	e = breaker()
	require.True(t, t2.Add(3*time.Minute).Equal(*e.CircuitOpenUntil), "capped: %s", e.CircuitOpenUntil)

	// The receiver recovers: the first success closes the breaker and
	// every delivery goes through.
	for range 4 {
		f.pg.AdvanceSimClock(t, 3*time.Minute)
		f.runWorker(t)
	}
	e = breaker()
	require.Nil(t, e.CircuitOpenUntil)
	require.Zero(t, e.ConsecutiveFailures)
	total := 0
	for _, d := range ds {
		got := f.delivery(t, d.ID)
		require.Equal(t, webhook.StateSucceeded, got.State)
		total += int(got.Attempts)
	}
	require.Equal(t, len(rcv.requests()), total, "only real requests count as attempts")
}

// Recover runs at most once per RecoverInterval per endpoint; a second one
// is RATE_LIMITED, also when two race.
func TestRecoverIsRateLimitedPerEndpoint(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	ep := f.createEndpoint(t, acmeMember, "https://hooks.acme.example/r")
	other := f.createEndpoint(t, acmeMember, "https://hooks.acme.example/s")
	since := f.pg.Now(t).Add(-time.Hour)

	_, err := f.svc.RecoverEndpoint(ctx, acmeMember, ep.ID, since)
	require.NoError(t, err)
	_, err = f.svc.RecoverEndpoint(ctx, acmeMember, ep.ID, since)
	require.Equal(t, core.CodeRateLimited, core.CodeOf(err))
	_, err = f.svc.RecoverEndpoint(ctx, acmeMember, other.ID, since)
	require.NoError(t, err, "the limit is per endpoint")
	f.pg.AdvanceSimClock(t, 59*time.Second)
	_, err = f.svc.RecoverEndpoint(ctx, acmeMember, ep.ID, since)
	require.Equal(t, core.CodeRateLimited, core.CodeOf(err))
	f.pg.AdvanceSimClock(t, time.Second)

	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.svc.RecoverEndpoint(ctx, acmeMember, ep.ID, since)
			switch {
			case err == nil:
				ok.Add(1)
			case core.CodeOf(err) == core.CodeRateLimited:
				limited.Add(1)
			default:
				t.Errorf("recover: %v", err)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, ok.Load())
	require.EqualValues(t, 3, limited.Load())
}
