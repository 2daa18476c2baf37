package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// clockSkew reads the clock.skew check of /readyz on base: its status and
// seconds ("" when /readyz does not answer or has no such check).
func clockSkew(ctx context.Context, base string) (string, float64) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	var body struct {
		Checks map[string]struct {
			Status  string   `json:"status"`
			Seconds *float64 `json:"seconds"`
		} `json:"checks"`
	}
	if json.NewDecoder(resp.Body).Decode(&body) != nil {
		return "", 0
	}
	c, ok := body.Checks["clock.skew"]
	if !ok || c.Seconds == nil {
		return "", 0
	}
	return c.Status, *c.Seconds
}

// Every process re-anchors its clock to compute_now(), whatever its
// roles, and reports clock.skew in /readyz (on COMPUTE_METRICS_ADDR): one
// `compute serve` per role, the simulated clock jumps an hour, and each
// process's /readyz soon reports its clock within a second of the
// database again. The clock used to be re-anchored only at the worker's
// lease renewals, so an API-only process reported an hour of skew for
// ever, and processes without the api role served no /readyz at all.
func TestClockReanchoredEveryRole(t *testing.T) {
	t.Parallel()
	for _, role := range []string{"api", "worker", "dispatcher", "gateway"} {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			d := pgtest.New(t)
			cfg, err := config.Load()
			require.NoError(t, err)
			cfg.DatabaseURL, cfg.Roles = d.URL, []string{role}
			cfg.Addr, cfg.MetricsAddr, cfg.GatewayAddr = freeAddr(t), freeAddr(t), freeAddr(t)
			cfg.GatewayID = "gw-" + role
			cfg.MaxConns, cfg.ListenURL = 4, "off"
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- serve(ctx, cfg, slog.New(slog.DiscardHandler), nil) }()
			t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
			base := "http://" + cfg.MetricsAddr

			inSync := func(c *assert.CollectT) {
				status, secs := clockSkew(ctx, base)
				assert.Equal(c, "ok", status, "clock.skew status (seconds %.3f)", secs)
				assert.Less(c, math.Abs(secs), 1.0, "clock.skew seconds")
			}
			require.EventuallyWithT(t, inSync, 30*time.Second, 20*time.Millisecond,
				"a %s process reports clock.skew in /readyz", role)

			d.AdvanceSimClock(t, time.Hour)
			require.EventuallyWithT(t, inSync, 30*time.Second, 20*time.Millisecond,
				"a %s process re-anchors its clock after compute_now() jumped an hour", role)
		})
	}
}
