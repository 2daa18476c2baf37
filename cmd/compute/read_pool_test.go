package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// An API process answers reads while every connection of its commands is
// taken: the queries have a pool of their own (COMPUTE_READ_MAX_CONNS).
// With one command connection held by a create that waits on its tenant's
// quota row (locked by another session), a GET is answered at once; with
// one pool for both it waited for the create.
func TestReadsDoNotQueueBehindCommands(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	commandstest.Seed(t, d, commands.New(d.Pool, commands.Config{}), 0)

	cfg, err := config.Load()
	require.NoError(t, err)
	cfg.DatabaseURL, cfg.Roles, cfg.ListenURL = d.URL, []string{"api"}, "off"
	cfg.Addr, cfg.MaxConns, cfg.ReadMaxConns = freeAddr(t), 1, 1
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- serve(sctx, cfg, slog.New(slog.DiscardHandler), nil) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	tok, err := (&commands.Tokens{Pool: d.Pool}).CreateToken(ctx, commandstest.Operator, "acme", "bob@acme", core.RoleMember)
	require.NoError(t, err)
	call := func(ctx context.Context, method, path, body string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, method, "http://"+cfg.Addr+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok.Secret)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	require.Eventually(t, func() bool {
		code, _ := call(ctx, http.MethodGet, "/v1/reservations", "")
		return code == http.StatusOK
	}, 30*time.Second, 10*time.Millisecond, "the API serves")

	// Another session holds acme's quota rows: a create of acme takes the
	// one command connection and waits for them.
	lock, err := d.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	_, err = lock.Exec(ctx, "SELECT 1 FROM quota_usage WHERE tenant_id = 'acme' FOR UPDATE")
	require.NoError(t, err)
	now := d.Now(t)
	created := make(chan int, 1)
	go func() {
		code, _ := call(ctx, http.MethodPost, "/v1/reservations", `{"poolId":"`+commandstest.Pool+`","vcpu":1,"start":"`+
			now.Format(time.RFC3339)+`","end":"`+now.Add(time.Hour).Format(time.RFC3339)+`"}`)
		created <- code
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, d.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
		   WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%QuotaUsageLockAndCharge%')`).Scan(&waiting))
		return waiting
	}, 30*time.Second, 10*time.Millisecond, "the create waits on the quota rows")

	rctx, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	code, body := call(rctx, http.MethodGet, "/v1/reservations", "")
	require.Equal(t, http.StatusOK, code, "a read while the command connection is taken: %s", body)
	select {
	case c := <-created:
		t.Fatalf("the create finished (%d) before its quota rows were free", c)
	default:
	}

	require.NoError(t, lock.Rollback(ctx))
	require.Equal(t, http.StatusCreated, <-created, "the create goes on once the rows are free")
}
