package main

import (
	"log/slog"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/config"
)

// compute serve's private PostgreSQL (DATABASE_URL unset) listens on no TCP
// address, only on a unix socket in a directory of mode 0700 owned by the
// server's user (postgres when the test is root): a tenant's workload on
// the same machine cannot reach it. The pool and the URL openDatabase
// returns (for LISTEN) connect through that socket.
func TestPrivateClusterListensOnASocketOnly(t *testing.T) {
	t.Parallel()
	dir := scratchDir(t)
	cfg := config.Config{PGDir: filepath.Join(dir, ".compute", "pg")}
	pool, dbURL, closeDB, err := openDatabase(t.Context(), cfg, slog.New(slog.DiscardHandler), "compute-test")
	require.NoError(t, err)
	defer closeDB()

	var listen string
	require.NoError(t, pool.QueryRow(t.Context(), "SHOW listen_addresses").Scan(&listen))
	require.Empty(t, listen, "the private cluster listens on TCP")
	var addr *string
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT inet_server_addr()::text").Scan(&addr))
	require.Nil(t, addr, "the pool's connection is not over the unix socket")

	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	require.Empty(t, u.Host, dbURL)
	sockDir := filepath.Join(cfg.PGDir, "sock")
	require.Equal(t, sockDir, u.Query().Get("host"))
	fi, err := os.Stat(sockDir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	owner := uint32(os.Geteuid())
	if owner == 0 {
		pgUser, err := user.Lookup("postgres")
		require.NoError(t, err)
		uid, err := strconv.ParseUint(pgUser.Uid, 10, 32)
		require.NoError(t, err)
		owner = uint32(uid)
	}
	require.Equal(t, owner, fi.Sys().(*syscall.Stat_t).Uid)
}
