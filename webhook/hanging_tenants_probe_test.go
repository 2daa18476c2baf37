package webhook_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/webhook"
)

// TestProbeHangingTenantsClaimChurn measures, on the real clock and with
// the default limits, what tenants whose endpoints never answer cost
// everyone else: 8 tenants with 20 endpoints each that accept the
// connection and hang until the 15 s timeout, 11 events each (220
// deliveries a tenant, 1,760 in all), and a healthy tenant whose proven
// endpoint answers at once, sent an event every 250 ms. It logs the claims
// of the hanging tenants' deliveries per second (work_queue.attempts),
// their attempts per second, and the healthy tenant's event → receipt
// latency (p50/p90/max) from the 20th to the 50th second, once the first
// timeouts have made the hanging endpoints failing. A probe, not a check
// (it asserts nothing about wall time): run it by hand with
// COMPUTE_WEBHOOK_PROBE=1.
func TestProbeHangingTenantsClaimChurn(t *testing.T) {
	if os.Getenv("COMPUTE_WEBHOOK_PROBE") == "" {
		t.Skip("a probe of about a minute; set COMPUTE_WEBHOOK_PROBE=1 to run it")
	}
	f := setup(t, webhook.Config{Rand: rand.Float64})
	f.pg.UseSimClock(t, false)
	ctx := context.Background()

	var mu sync.Mutex
	arrived := map[string]time.Time{}
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if _, ok := arrived[r.Header.Get("webhook-id")]; !ok {
			arrived[r.Header.Get("webhook-id")] = time.Now()
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(fast.Close)
	healthy := f.createEndpoint(t, acmeMember, fast.URL, "instance.failed")
	f.scheduled(t, healthy.ID, f.emit(t, "acme", "instance.failed"))
	f.runWorker(t) // acme's endpoint has answered

	slow := newGate(t)
	for i := range 8 {
		actor := core.Actor{TokenID: fmt.Sprintf("tok_p%d", i), Tenant: fmt.Sprintf("p%d", i), Identity: "p", Role: core.RoleMember}
		for j := range 20 {
			f.createEndpoint(t, actor, fmt.Sprintf("%s/p%d/%d", slow.URL, i, j), "reservation.booked")
		}
		for range 11 {
			f.emit(t, actor.Tenant, "reservation.booked")
		}
	}
	require.Eventually(t, func() bool {
		_, err := f.disp.RunOnce(ctx)
		require.NoError(t, err)
		var n int
		require.NoError(t, f.pg.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries`).Scan(&n))
		return n == 1+8*20*11
	}, time.Minute, 10*time.Millisecond)

	f.worker.Concurrency = webhook.DefaultConcurrency
	poke := make(chan struct{}, 1)
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); f.worker.Run(runCtx, time.Second, poke) }()
	sent := map[string]time.Time{}
	go func() { // the healthy tenant's events, dispatched as the server does
		defer wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
			ev, err := core.NewEvent("instance.failed", "acme", "things/1", map[string]any{"n": 1})
			if err != nil {
				return
			}
			mu.Lock()
			sent[ev.ID.String()] = time.Now()
			mu.Unlock()
			if err := f.append(runCtx, ev); err != nil {
				return
			}
			if _, err := f.disp.RunOnce(runCtx); err != nil {
				return
			}
			select {
			case poke <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { slow.release(); cancel(); wg.Wait() })

	claims := func() int64 {
		var n int64
		require.NoError(t, f.pg.Pool.QueryRow(ctx, `SELECT COALESCE(sum(w.attempts), 0) FROM work_queue w
			JOIN webhook_deliveries d ON d.id::text = w.key JOIN webhook_endpoints e ON e.id = d.endpoint_id
		   WHERE w.kind = $1 AND e.tenant_id <> 'acme'`, webhook.KindDeliver).Scan(&n))
		return n
	}
	start := time.Now()
	const from, to = 20 * time.Second, 50 * time.Second
	time.Sleep(from) // a probe on the real clock: a measuring window, not a wait
	c0, a0 := claims(), slow.received.Load()
	time.Sleep(to - from)
	c1, a1 := claims(), slow.received.Load()
	cancel()

	mu.Lock()
	defer mu.Unlock()
	var lat []time.Duration
	missing := 0
	for id, at := range sent {
		if at.Sub(start) < from || at.Sub(start) > to-2*time.Second {
			continue
		}
		got, ok := arrived[id]
		if !ok {
			missing++
			continue
		}
		lat = append(lat, got.Sub(at))
	}
	slices.Sort(lat)
	require.NotEmpty(t, lat)
	secs := (to - from).Seconds()
	t.Logf("hanging tenants' claims %.1f/s, attempts %.1f/s; healthy tenant %d events, latency p50 %v p90 %v max %v, %d not delivered",
		float64(c1-c0)/secs, float64(a1-a0)/secs, len(lat),
		lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*9/10].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), missing)
}

// append writes ev to the outbox in a transaction of its own.
func (f *fixture) append(ctx context.Context, ev core.Event) error {
	return pg.InTx(ctx, f.pg.Pool, func(tx pgx.Tx) error {
		_, err := outbox.Append(ctx, db.New(tx), ev)
		return err
	})
}
