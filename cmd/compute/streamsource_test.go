package main

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/outbox"
)

// With COMPUTE_STREAM_SOURCE=nats an API process serves GET
// /v1/events/stream from the JetStream stream a dispatcher process fills:
// a committed event reaches a stream client, and /readyz reports the
// source's connection.
func TestServeStreamsEventsFromJetStream(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	d := pgtest.New(t)
	serveDispatcher(t, d, srv.URL) // the sink

	cfg, err := config.Load()
	require.NoError(t, err)
	cfg.DatabaseURL, cfg.Roles, cfg.NATSURL, cfg.StreamSource = d.URL, []string{"api"}, srv.URL, config.StreamSourceNATS
	cfg.Addr, cfg.MaxConns, cfg.ListenURL, cfg.PollInterval = freeAddr(t), 4, "off", 10*time.Millisecond
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
	base := "http://" + cfg.Addr
	tok, err := (&commands.Tokens{Pool: d.Pool}).CreateToken(context.Background(),
		core.Actor{Role: core.RoleOperator, Identity: "test"}, "ops", "root@ops", core.RoleOperator)
	require.NoError(t, err)
	get := func(ctx context.Context, path string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok.Secret)
		return http.DefaultClient.Do(req)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		resp, err := get(context.Background(), "/readyz")
		if !assert.NoError(c, err) {
			return
		}
		defer resp.Body.Close()
		var body struct {
			Checks map[string]struct {
				Status string `json:"status"`
			} `json:"checks"`
		}
		assert.NoError(c, json.NewDecoder(resp.Body).Decode(&body))
		assert.Equal(c, "ok", body.Checks["nats.stream_source"].Status)
	}, 30*time.Second, 10*time.Millisecond)
	require.Contains(t, logs.String(), "event streams served from NATS JetStream")

	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	resp, err := get(sctx, "/v1/events/stream?after=")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	e, err := core.NewEvent("test.happened", "acme", "thing-1", map[string]string{"id": "thing-1"})
	require.NoError(t, err)
	pos, err := outbox.Append(context.Background(), d.Q, e)
	require.NoError(t, err)

	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-sctx.Done():
				return
			}
		}
	}()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the stream ended")
			if id, ok := strings.CutPrefix(l, "id: "); ok && id == pos.String() {
				require.Equal(t, "event: test.happened", <-lines)
				require.Contains(t, <-lines, e.ID.String())
				return
			}
		case <-deadline:
			t.Fatal("the event did not reach the stream")
		}
	}
}
