package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/testenv"
)

func testOptions(t *testing.T, dir string) Options {
	return Options{Dir: dir, Fast: true, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
}

// startCluster starts a cluster and makes sure the test does not leave it
// running.
func startCluster(t *testing.T, dir string) *Cluster {
	t.Helper()
	c, err := Start(t.Context(), testOptions(t, dir))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Stop()) })
	return c
}

func connect(t *testing.T, c *Cluster) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), c.URL("postgres"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func systemID(t *testing.T, conn *pgx.Conn) int64 {
	t.Helper()
	var id int64
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT system_identifier FROM pg_control_system()").Scan(&id))
	return id
}

func greeting(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var s string
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT msg FROM survivor").Scan(&s))
	return s
}

// TestLifecycle walks one directory through everything Start must cope
// with: first start (initdb), clean restart (reuse), a server left running
// by an earlier process, and a crash.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	// Not t.TempDir: its parent is private to root, which would send the
	// cluster to the fallback directory (TestFallbackDir covers that).
	dir, err := os.MkdirTemp("", "pgcluster-test-")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
	require.NoError(t, os.Chmod(dir, 0o755))

	// First run: initdb, Fast settings, some data.
	c1 := startCluster(t, dir)
	require.Equal(t, dir, c1.Dir())
	require.Equal(t, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c1.Port()), c1.URL("postgres"))
	conn := connect(t, c1)
	for setting, want := range map[string]string{
		"fsync":              "off",
		"synchronous_commit": "off",
		"full_page_writes":   "off",
		"listen_addresses":   "127.0.0.1",
		"max_connections":    "300",
		"server_encoding":    "UTF8",
	} {
		var got string
		require.NoError(t, conn.QueryRow(t.Context(), "SELECT current_setting($1)", setting).Scan(&got))
		require.Equal(t, want, got, setting)
	}
	_, err = conn.Exec(t.Context(), "CREATE TABLE survivor (msg text); INSERT INTO survivor VALUES ('hello')")
	require.NoError(t, err)
	id := systemID(t, conn)
	require.NoError(t, conn.Close(t.Context()))
	require.NoError(t, c1.Stop())
	require.NoError(t, c1.Stop(), "Stop must be idempotent")
	_, err = pgx.Connect(t.Context(), c1.URL("postgres"))
	require.Error(t, err, "server still answers after Stop")

	// Second run: same cluster (same system identifier: no initdb), data kept.
	c2 := startCluster(t, dir)
	conn = connect(t, c2)
	require.Equal(t, id, systemID(t, conn))
	require.Equal(t, "hello", greeting(t, conn))
	require.NoError(t, conn.Close(t.Context()))

	// While c2 is in use, nobody else may take its directory.
	_, err = Start(t.Context(), testOptions(t, dir))
	require.ErrorContains(t, err, "in use by another running process")
	conn = connect(t, c2)
	require.Equal(t, "hello", greeting(t, conn))
	require.NoError(t, conn.Close(t.Context()))

	// A process that died without calling Stop: the next Start stops its
	// server and takes over.
	abandon(t, c2)
	c3 := startCluster(t, dir)
	conn = connect(t, c3)
	require.Equal(t, "hello", greeting(t, conn))
	require.NoError(t, conn.Close(t.Context()))

	// A crash: kill the server and all its backends. The next Start finds
	// the stale postmaster.pid and recovers.
	require.NoError(t, syscall.Kill(-c3.pid, syscall.SIGKILL)) // the postmaster leads its process group
	abandon(t, c3)
	require.Eventually(t, func() bool { return !groupAlive(t, c3.pid) }, 30*time.Second, 10*time.Millisecond)
	require.FileExists(t, filepath.Join(dir, "data", "postmaster.pid"))
	c4 := startCluster(t, dir)
	conn = connect(t, c4)
	require.Equal(t, id, systemID(t, conn))
	require.Equal(t, "hello", greeting(t, conn))
	require.NoError(t, conn.Close(t.Context()))
	require.NoError(t, c4.Stop())
}

// abandon makes c as if the process that started it had died: the kernel
// drops its lock, and its server (if still up) is left running.
func abandon(t *testing.T, c *Cluster) {
	require.NoError(t, c.lock.Close())
	c.stopped = true
}

// groupAlive reports whether any process of process group pgid is still
// running. Zombies do not count: nothing may reap them here.
func groupAlive(t *testing.T, pgid int) bool {
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// "pid (comm) state ppid pgrp ..."
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" && fields[0] != "X" {
			return true
		}
	}
	return false
}

// TestFallbackDir checks that a directory the postgres user cannot enter
// (t.TempDir's parent is mode 0700, owned by root) sends the cluster to a
// fallback under os.TempDir().
func TestFallbackDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the fallback only applies when running as root")
	}
	t.Parallel()
	dir := t.TempDir()
	c, err := Start(t.Context(), testOptions(t, dir))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(c.Dir())) })
	t.Cleanup(func() { require.NoError(t, c.Stop()) })

	require.NotEqual(t, dir, c.Dir())
	require.Equal(t, filepath.Clean(os.TempDir()), filepath.Dir(c.Dir()))
	require.FileExists(t, filepath.Join(c.Dir(), "data", "PG_VERSION"))
	var one int
	require.NoError(t, connect(t, c).QueryRow(t.Context(), "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)
}

func TestStartErrors(t *testing.T) {
	_, err := Start(t.Context(), Options{})
	require.ErrorContains(t, err, "Dir is empty")

	_, err = Start(t.Context(), Options{Dir: filepath.Join(t.TempDir(), `my"dir`)})
	require.ErrorContains(t, err, "must not contain")

	// A non-empty data dir that is not a cluster is someone else's: refuse.
	dir, err := os.MkdirTemp("", "pgcluster-test-")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data", "precious"), nil, 0o600))
	_, err = Start(t.Context(), Options{Dir: dir})
	require.ErrorContains(t, err, "holds no PostgreSQL cluster")
	require.FileExists(t, filepath.Join(dir, "data", "precious"))
}

func TestHelpers(t *testing.T) {
	require.Negative(t, compareVersions("9.6", "15"))
	require.Positive(t, compareVersions("16", "15"))
	require.Zero(t, compareVersions("15", "15"))
	require.Equal(t, "16", leadingVersion("16beta1"))
	require.Equal(t, `'it'\''s'`, shellQuote("it's"))
	require.Equal(t, "''", shellQuote(""))
	require.False(t, processAlive(os.Getpid()), "the test binary is not a postgres process")
	require.Contains(t, serverOptions(5432, "/s", false, true, nil), "-c fsync=off")
	require.NotContains(t, serverOptions(5432, "/s", false, false, nil), "fsync")
	require.Equal(t, []string{"HOME=/x"}, childEnv([]string{"PGDATA=/y", "HOME=/x", "PGPORT=1"}))
}

// `make clean` removes "the private PostgreSQL data", also where a root
// run put it: the fallback directories of `make run`'s .compute/pg and
// `make test`'s .compute/testpg, and no other cluster under the temp dir.
func TestMakeCleanRemovesTheFallbackDirs(t *testing.T) {
	for _, tool := range []string{"make", "sha256sum"} {
		_, err := exec.LookPath(tool)
		testenv.Require(t, err == nil, "make clean needs %s", tool)
	}
	t.Parallel()
	makefile, err := os.ReadFile("../../../Makefile")
	require.NoError(t, err)
	checkout, tmp := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(checkout, "Makefile"), makefile, 0o644))
	var clusters []string
	for _, d := range []string{"pg", "testpg"} {
		dir := filepath.Join(tmp, filepath.Base(fallbackDir(filepath.Join(checkout, ".compute", d))))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "data", "PG_VERSION"), []byte("15\n"), 0o600))
		clusters = append(clusters, dir)
	}
	other := filepath.Join(tmp, filepath.Base(fallbackDir(filepath.Join(checkout, "elsewhere"))))
	require.NoError(t, os.MkdirAll(other, 0o700))

	cmd := exec.Command("make", "-C", checkout, "clean")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, dir := range clusters {
		require.NoDirExists(t, dir, "make clean left a fallback cluster")
	}
	require.DirExists(t, other, "make clean removed a cluster that is not the checkout's")
}
