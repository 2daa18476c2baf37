package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/natsink"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/webhook"
)

// serveDispatcher runs `compute serve` with the dispatcher role on d until
// the test ends, with COMPUTE_NATS_URL set to natsURL (empty: unset), and
// returns its internal listener's base URL and its log.
func serveDispatcher(t *testing.T, d *pgtest.DB, natsURL string) (string, *testenv.LogBuffer) {
	t.Helper()
	cfg, err := config.Load()
	require.NoError(t, err)
	cfg.DatabaseURL, cfg.Roles, cfg.NATSURL = d.URL, []string{"dispatcher"}, natsURL
	cfg.MetricsAddr, cfg.MaxConns, cfg.ListenURL, cfg.PollInterval = freeAddr(t), 4, "off", 10*time.Millisecond
	logs := &testenv.LogBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, slog.New(slog.NewJSONHandler(logs, nil)), nil) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		if t.Failed() {
			t.Logf("serve's log:\n%s", logs)
		}
	})
	return "http://" + cfg.MetricsAddr, logs
}

// readyChecksOf reads /readyz on base: its status and each check's.
func readyChecksOf(base string) (string, map[string]string) {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return "", nil
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Checks map[string]struct {
			Status string `json:"status"`
		} `json:"checks"`
	}
	if json.NewDecoder(resp.Body).Decode(&body) != nil {
		return "", nil
	}
	out := map[string]string{}
	for name, c := range body.Checks {
		out[name] = c.Status
	}
	return body.Status, out
}

// metricsOf reads /metrics on base ("" when it does not answer).
func metricsOf(base string) string {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// Without COMPUTE_NATS_URL nothing of NATS is built: no sink
// configuration, no /readyz check; a dispatcher process runs no Router
// and exports no NATS or Router metric.
func TestServeWithoutNATSStartsNoneOfIt(t *testing.T) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, config.Prefix+"_NATS_") {
			t.Setenv(name, "") // restored after the test
			os.Unsetenv(name)
		}
	}
	cfg, err := config.Load()
	require.NoError(t, err)
	require.Empty(t, cfg.NATSURL)
	_, ok := jetStreamConfig(cfg, "p1")
	require.False(t, ok)
	var names []string
	for _, c := range readyChecks(cfg, nil, nil) {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"outbox.frontier"}, names)

	base, logs := serveDispatcher(t, pgtest.New(t), "")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		status, checks := readyChecksOf(base)
		assert.NotEmpty(c, status)
		assert.Contains(c, checks, "outbox.frontier")
		assert.NotContains(c, checks, "nats.connection")
		assert.NotContains(c, checks, "nats.lag")
	}, 30*time.Second, 10*time.Millisecond)
	m := metricsOf(base)
	require.Contains(t, m, "compute_build_info")
	require.NotContains(t, m, "compute_nats_connected")
	require.NotContains(t, m, "compute_router_")
	require.NotContains(t, logs.String(), "watermill router running")
}

// With COMPUTE_NATS_URL a dispatcher process runs the watermill Router
// with the JetStream forwarder: a committed event reaches the stream on
// its subject; /readyz reports the connection and the lag, /metrics the
// connection and the Router's handler timings. When NATS goes away the
// process stays ready (degraded), and the event committed meanwhile
// arrives once NATS is back.
func TestServeForwardsEventsToJetStream(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	d := pgtest.New(t)
	base, logs := serveDispatcher(t, d, srv.URL)

	appendEvent := func(tenant string) (core.Event, outbox.Position) {
		// A type no projection follows: the dispatcher role runs them too.
		e, err := core.NewEvent("test.happened", tenant, "thing-1", map[string]string{"id": "thing-1"})
		require.NoError(t, err)
		pos, err := outbox.Append(context.Background(), d.Q, e)
		require.NoError(t, err)
		return e, pos
	}
	// passed says whether sink's cursor is at or past pos.
	passed := func(sink string, pos outbox.Position) bool {
		cur, err := outbox.CursorOf(context.Background(), d.Q, sink)
		return err == nil && !cur.Less(pos)
	}
	// inStream looks for the event by stream sequence: nats-server 2.9.10
	// (Debian's) crashes on a get by last subject that finds nothing.
	inStream := func(e core.Event) func() bool {
		return func() bool {
			nc, err := nats.Connect(srv.URL)
			if err != nil {
				return false
			}
			defer nc.Close()
			js, err := nc.JetStream()
			if err != nil {
				return false
			}
			info, err := js.StreamInfo(natsink.DefaultStream)
			if err != nil {
				return false
			}
			for seq := info.State.FirstSeq; seq > 0 && seq <= info.State.LastSeq; seq++ {
				m, err := js.GetMsg(natsink.DefaultStream, seq)
				if err == nil && m.Header.Get(nats.MsgIdHdr) == e.ID.String() {
					return m.Subject == natsink.Subject(e.TenantID, e.Type)
				}
			}
			return false
		}
	}

	first, _ := appendEvent("acme")
	require.Eventually(t, inStream(first), 30*time.Second, 10*time.Millisecond, "the event reaches JetStream")
	require.Contains(t, logs.String(), "watermill router running")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		status, checks := readyChecksOf(base)
		assert.Equal(c, "ok", status)
		assert.Equal(c, "ok", checks["nats.connection"])
		assert.Equal(c, "ok", checks["nats.lag"])
	}, 30*time.Second, 10*time.Millisecond)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		m := metricsOf(base)
		assert.Contains(c, m, "compute_nats_connected 1")
		assert.Contains(c, m, `compute_router_handler_execution_time_seconds_count{handler_name="jetstream",success="true"}`)
		assert.Regexp(c, `compute_router_publish_time_seconds_count\{handler_name="jetstream",[^}]*success="true"\} 1\n`, m)
		assert.Contains(c, m, `compute_outbox_dispatched_events_total{sink="jetstream"} 1`)
		assert.Contains(c, m, `compute_outbox_sink_lag_events{sink="jetstream"} 0`)
	}, 30*time.Second, 10*time.Millisecond)

	srv.Kill()
	second, pos := appendEvent("")
	others := []string{webhook.SinkID}
	for _, p := range projections.All() {
		others = append(others, p.ID())
	}
	require.Eventually(t, func() bool {
		for _, sink := range others {
			if !passed(sink, pos) {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "the other sinks go on without NATS")
	require.False(t, passed(natsink.SinkID, pos), "the JetStream sink waits for NATS")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		status, checks := readyChecksOf(base)
		assert.Equal(c, "degraded", status, "NATS down degrades, never fails, readiness")
		assert.Equal(c, "degraded", checks["nats.connection"])
	}, 30*time.Second, 10*time.Millisecond)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Contains(c, metricsOf(base), "compute_nats_connected 0")
	}, 30*time.Second, 10*time.Millisecond)
	srv.Start()
	require.Eventually(t, inStream(second), 30*time.Second, 10*time.Millisecond, "the event committed while NATS was down arrives")
	require.Eventually(t, func() bool { return passed(natsink.SinkID, pos) }, 30*time.Second, 10*time.Millisecond)
}
