package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/wire"
)

// gatewayStart is a gateway as serve starts it, on a loopback port, with
// node n1 joined. Its background loops (the lease renewals, the server)
// are held back until run is called, so that the test sees what
// startGateway did by itself before anything is served.
type gatewayStart struct {
	d     *pgtest.DB
	url   string
	token string
	held  []func()
	run   func()
}

func newGatewayStart(t *testing.T, predecessor func(d *pgtest.DB)) *gatewayStart {
	t.Helper()
	d := pgtest.New(t)
	logger := slog.New(slog.DiscardHandler)
	cfg, err := config.Load()
	require.NoError(t, err)
	cfg.GatewayID = "gw1"
	svc := newServices(d.Pool, cfg, logger, nil)
	commandstest.Seed(t, d, svc.handlers, 2)
	commandstest.Node(t, svc.handlers, "n1", core.GPULayout{Mode: core.GPUExclusive})
	ctx := context.Background()
	cred, err := svc.handlers.JoinNode(ctx, commandstest.Operator, "n1")
	require.NoError(t, err)
	predecessor(d)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := &gatewayStart{d: d, url: "http://" + ln.Addr().String() + wire.Path, token: cred.Token}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stop := startGateway(runCtx, cfg, ln, "gw1-second", svc, observability{registry: prometheus.NewRegistry()}, logger,
		func(f func()) { g.held = append(g.held, f) })
	g.run = func() {
		for _, f := range g.held {
			wg.Go(f)
		}
	}
	t.Cleanup(func() { cancel(); stop(); wg.Wait(); _ = ln.Close() })
	return g
}

// holds reports whether the restarted process holds the gateway's lease.
func (g *gatewayStart) holds(t *testing.T) bool {
	t.Helper()
	var n int
	require.NoError(t, g.d.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM leases WHERE name = $1 AND owner = $2 AND expires_at > compute_now()",
		gateway.GatewayLeaseName("gw1"), "gw1-second").Scan(&n))
	return n == 1
}

// After a graceful restart (the predecessor released the lease), a
// daemon's first dial is welcomed. Before, serve opened the gateway's
// listener while the lease was still being taken in the background, and
// the daemons' first dials got 503 "gateway does not hold its lease" and
// came back a second later (measured with real processes: up to a second
// more per restart for every node).
func TestRestartedGatewayHoldsItsLeaseBeforeItServes(t *testing.T) {
	t.Parallel()
	g := newGatewayStart(t, func(d *pgtest.DB) {
		l, err := lease.Acquire(context.Background(), d.Q, gateway.GatewayLeaseName("gw1"), "gw1-first", lease.GatewayTTL)
		require.NoError(t, err)
		require.NoError(t, l.Release(context.Background(), d.Q))
	})
	require.True(t, g.holds(t), "the lease is taken before any daemon is served")

	g.run()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+g.url[len("http"):], &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": []string{"Bearer " + g.token}}})
	require.NoError(t, err, "the first dial is not refused")
	defer func() { _ = ws.CloseNow() }()
	hello, err := json.Marshal(wire.Message{Type: wire.TypeHello, JournalID: "j1"})
	require.NoError(t, err)
	require.NoError(t, ws.Write(ctx, websocket.MessageText, hello))
	_, data, err := ws.Read(ctx)
	require.NoError(t, err)
	var welcome wire.Message
	require.NoError(t, json.Unmarshal(data, &welcome))
	require.Equal(t, wire.TypeWelcome, welcome.Type)
}

// After a crash, the dead predecessor's lease is still live: the restarted
// gateway does not wait for it to lapse before it serves (its port is up and
// answers), and answers 503 until takeOver takes the lease at the lapse.
func TestGatewayRestartedAfterACrashServesWithoutItsLease(t *testing.T) {
	t.Parallel()
	g := newGatewayStart(t, func(d *pgtest.DB) {
		_, err := lease.Acquire(context.Background(), d.Q, gateway.GatewayLeaseName("gw1"), "gw1-dead", lease.GatewayTTL)
		require.NoError(t, err)
	})
	require.False(t, g.holds(t))

	g.run()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, g.url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+g.token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
}
