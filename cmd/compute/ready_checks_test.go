package main

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/clock"
)

// The database checks of /readyz that read a figure (the outbox frontier,
// the JetStream sink's lag) say what they could not read, not pgx's error:
// that named the server's address and the user connecting, the way the
// database check's message does not.
func TestReadyChecksKeepTheDatabaseErrorOut(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://secret_user@127.0.0.1:1/compute?connect_timeout=1")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	for _, chk := range []httpapi.ReadyCheck{frontierCheck(pool), jetStreamLagCheck(pool, clock.New(nil))} {
		r := chk.Run(context.Background())
		require.Equal(t, httpapi.CheckDegraded, r.Status, chk.Name)
		require.Contains(t, r.Message, "could not read", chk.Name)
		require.NotContains(t, r.Message, "secret_user", chk.Name)
		require.NotContains(t, r.Message, "127.0.0.1", chk.Name)
	}
}
