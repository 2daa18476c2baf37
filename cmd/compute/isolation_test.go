package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/webhook"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// stuckReceiver holds every request until the test ends (or the client
// gives up), like the security review's endpoints that answered after
// 14 s, and records how many it held at most at once.
type stuckReceiver struct {
	*httptest.Server
	held, maxHeld, answered atomic.Int64
}

func newStuckReceiver(t *testing.T) *stuckReceiver {
	r := &stuckReceiver{}
	release := make(chan struct{})
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := r.held.Add(1)
		defer r.held.Add(-1)
		for m := r.maxHeld.Load(); n > m && !r.maxHeld.CompareAndSwap(m, n); m = r.maxHeld.Load() {
		}
		select {
		case <-release:
			r.answered.Add(1)
			w.WriteHeader(http.StatusNoContent)
		case <-req.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); r.Server.Close() })
	return r
}

// One tenant's slow webhook endpoints cannot starve another tenant: with
// tenant A's 60 endpoints hanging on 2,640 deliveries, tenant B's webhook
// is delivered and B's reservation is activated at its start, while A's
// deliveries are still stuck. With the one shared pool of 8 slots that ran
// every kind before, A's hanging attempts held all 8 slots for the whole
// webhook timeout, batch after batch, and neither happened.
func TestSlowTenantWebhooksDoNotStarveOtherTenants(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	logger := slog.New(slog.DiscardHandler)
	cfg, err := config.Load()
	require.NoError(t, err)
	cfg.WebhookAllowPrivate = true        // receivers listen on loopback
	cfg.WebhookTimeout = 10 * time.Minute // A's attempts hang for the whole test
	cfg.WebhookMaxEndpoints = 60          // the review's 60 endpoints
	cfg.PollInterval = 20 * time.Millisecond
	svc := newServices(d.Pool, cfg, logger, nil)
	commandstest.Seed(t, d, svc.handlers, 2)
	commandstest.Node(t, svc.handlers, "n1", core.GPULayout{Mode: core.GPUExclusive})
	ctx := context.Background()

	// Tenant A: 60 endpoints at a receiver that never answers in time.
	slow := newStuckReceiver(t)
	var aEndpoints []string
	for i := range 60 {
		e, err := svc.webhooks.CreateEndpoint(ctx, commandstest.TenantA, webhook.CreateEndpoint{
			URL: fmt.Sprintf("%s/a/%d", slow.URL, i), EventTypes: []string{"reservation.booked"},
		})
		require.NoError(t, err)
		aEndpoints = append(aEndpoints, e.ID)
	}
	_, err = svc.webhooks.CreateEndpoint(ctx, commandstest.TenantA, webhook.CreateEndpoint{URL: slow.URL + "/a/60"})
	require.Equal(t, core.CodeQuotaExceeded, core.CodeOf(err), "the 61st endpoint is over the cap")

	// Tenant B: one endpoint at a receiver that answers at once.
	var mu sync.Mutex
	var bGot []core.Event
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var ev core.Event
		_ = json.Unmarshal(body, &ev)
		mu.Lock()
		bGot = append(bGot, ev)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(fast.Close)
	_, err = svc.webhooks.CreateEndpoint(ctx, commandstest.TenantB, webhook.CreateEndpoint{
		URL: fast.URL + "/b", EventTypes: []string{"reservation.booked"},
	})
	require.NoError(t, err)

	// A's backlog: 44 events × 60 endpoints = 2,640 deliveries.
	for range 44 {
		ev, err := core.NewEvent("reservation.booked", "acme", "reservations/r_flood", map[string]any{"n": 1})
		require.NoError(t, err)
		commandstest.AppendEvents(t, d.Pool, ev)
	}

	// The worker and dispatcher roles as serve wires them.
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	reconcilers, deliveries := newWorkers(d.Pool, "test-process", clock.New(logger), cfg, svc, logger)
	wake := make(chan struct{}, 1)
	wakeWorker := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	wg.Add(2)
	go func() { defer wg.Done(); reconcilers.Run(runCtx, cfg.PollInterval, nil) }()
	go func() { defer wg.Done(); deliveries.Run(runCtx, cfg.PollInterval, wake) }()
	for _, disp := range sinks(d.Pool, "test-process", svc, wakeWorker, nil, logger) {
		wg.Add(1)
		go func() { defer wg.Done(); disp.Run(runCtx, cfg.PollInterval, nil) }()
	}

	countA := func() int {
		var n int
		require.NoError(t, d.Pool.QueryRow(ctx,
			"SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = ANY($1)", aEndpoints).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return countA() == 44*60 && slow.held.Load() > 0 }, 30*time.Second, 10*time.Millisecond,
		"A's deliveries are scheduled and its first attempts hang")

	// B books a reservation that starts in 30 s.
	now := d.Now(t)
	res, err := svc.handlers.CreateReservation(ctx, commandstest.TenantB, commands.CreateReservation{
		PoolID: commandstest.Pool, GPUs: 1, Start: now.Add(30 * time.Second), End: now.Add(time.Hour),
	})
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, res.Reservation.State)

	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range bGot {
			if ev.Type == "reservation.booked" && ev.TenantID == "globex" {
				return true
			}
		}
		return false
	}, 20*time.Second, 10*time.Millisecond, "B's webhook is delivered while A's hang")

	d.AdvanceSimClock(t, 30*time.Second) // B's window starts
	require.Eventually(t, func() bool {
		got, err := svc.handlers.GetReservation(ctx, commandstest.TenantB, res.Reservation.ID)
		require.NoError(t, err)
		return got.State == core.ReservationActive
	}, 20*time.Second, 10*time.Millisecond, "B's reservation is activated at its start while A's webhooks hang")

	// A is still stuck, and never had more than its cap in flight.
	require.Positive(t, slow.held.Load(), "A's attempts are still hanging")
	require.Zero(t, slow.answered.Load())
	require.LessOrEqual(t, slow.maxHeld.Load(), int64(cfg.WebhookMaxInflightPerTenant))
	var delivered int
	require.NoError(t, d.Pool.QueryRow(ctx,
		"SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = ANY($1) AND state <> 'pending'", aEndpoints).Scan(&delivered))
	require.Zero(t, delivered)
}
