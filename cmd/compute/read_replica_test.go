package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/testenv"
)

// With COMPUTE_READ_DATABASE_URL, an API process measures its standby and
// says so in its log: in rotation while it keeps up, out (reads on the
// primary) once it stops replaying for longer than COMPUTE_READ_MAX_LAG,
// and back after it resumes.
func TestServeWithAReadReplica(t *testing.T) {
	r := pgtest.NewReplicated(t)
	cfg, err := config.Load()
	require.NoError(t, err)
	cfg.DatabaseURL, cfg.ReadDatabaseURL, cfg.ReadMaxLag = r.PrimaryURL, r.StandbyURL, 200*time.Millisecond
	cfg.Roles, cfg.Addr, cfg.MaxConns, cfg.ListenURL = []string{"api"}, freeAddr(t), 4, "off"
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
	count := func(msg string) int { return strings.Count(logs.String(), `"msg":"`+msg+`"`) }
	require.Eventually(t, func() bool { return count("read replica in rotation") == 1 }, 30*time.Second, 20*time.Millisecond,
		"the standby keeps up")

	_, err = r.StandbyPool.Exec(ctx, "SELECT pg_wal_replay_pause()")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := r.Pool.Exec(ctx, "SELECT pg_switch_wal()") // WAL the standby does not replay
		return err == nil && count("read replica out of rotation: reads go to the primary") == 1
	}, 30*time.Second, 50*time.Millisecond, "a standby that stopped replaying leaves rotation")

	_, err = r.StandbyPool.Exec(ctx, "SELECT pg_wal_replay_resume()")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return count("read replica in rotation") == 2 }, 30*time.Second, 20*time.Millisecond,
		"back once it caught up")
}

// The standby's pool is sized as the queries' pool on the primary, not as
// the commands'.
func TestReplicaPoolIsTheReadPoolsSize(t *testing.T) {
	cfg, err := config.Load()
	require.NoError(t, err)
	cfg.MaxConns, cfg.ReadMaxConns = 6, 3
	require.Equal(t, int32(3), replicaPoolOptions(cfg).MaxConns)
}
