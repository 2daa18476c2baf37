package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// Commands waiting on a lock hold every connection of the command pool
// (`compute serve --demo`: a tenant row locked from psql, twelve creates
// at once). The database is fine and reads are served, but /readyz queued
// for a connection behind the commands and answered 503 "database
// unreachable: timed out after 2s": a load balancer takes every replica
// out, since all see the same contention, and a slow command becomes an
// outage of reads too. Its checks run on a pool of their own (ProbePool).
func TestReadyzDoesNotQueueBehindCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tdb := pgtest.New(t)
	busy, err := pg.Connect(ctx, tdb.URL, pg.PoolOptions{MaxConns: 1})
	require.NoError(t, err)
	t.Cleanup(busy.Close)
	held, err := busy.Acquire(ctx) // the command pool's every connection, in use
	require.NoError(t, err)
	t.Cleanup(held.Release)

	e := httpapi.New(httpapi.Deps{
		Pool: busy, ProbePool: tdb.Pool, Commands: commands.New(busy, commands.Config{}), Clock: clock.New(nil),
		Auth: authn.New(tdb.Pool, 0), Logger: slog.New(slog.DiscardHandler),
	})
	srv := httptest.NewServer(httpapi.InternalHandler(e)) // details without a token
	t.Cleanup(srv.Close)
	s := &testServer{url: srv.URL}

	r := s.call(t, http.MethodGet, "/readyz", "", nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var body httpapi.Readiness
	r.decode(t, &body)
	require.Equal(t, httpapi.CheckOK, body.Checks["database"].Status)
	require.NotEqual(t, httpapi.CheckUnavailable, body.Checks["clock.skew"].Status, "compute_now() was read")
}
