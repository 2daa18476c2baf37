// Package pgtest gives each test its own PostgreSQL database, cloned from a
// template database that was migrated once per server. Tests run against a
// real server, never a mock: with DATABASE_URL set they use that server,
// otherwise Main starts a private cluster for the test binary.
//
// Every database starts on the simulated clock at SimEpoch, so leases,
// deadlines and liveness move only when a test moves time.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/cluster"
)

// SimEpoch is where every test database's simulated clock starts.
var SimEpoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Main runs a test binary's tests against DATABASE_URL, or against a private
// cluster it starts and stops when DATABASE_URL is unset. Use it from
// TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	if os.Getenv("DATABASE_URL") != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "compute-pgtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// MkdirTemp makes the directory 0700; the postgres OS user must enter it.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	cluster, err := cluster.Start(context.Background(), cluster.Options{Dir: filepath.Join(dir, "pg"), Fast: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: start postgres:", err)
		return 1
	}
	defer func() {
		cluster.Stop()
		os.RemoveAll(cluster.Dir()) // differs from dir when the cluster had to move
	}()
	os.Setenv("DATABASE_URL", cluster.URL("postgres"))
	return m.Run()
}

// adminURL is where databases are created and dropped and the template is
// migrated: PGTEST_ADMIN_URL, a direct connection to the server, when the
// tests' own connections (DATABASE_URL) go through PgBouncer in transaction
// pooling mode — the template's session advisory lock and CREATE DATABASE
// … TEMPLATE need a session of their own — else DATABASE_URL itself.
func adminURL(serverURL string) string {
	if u := os.Getenv("PGTEST_ADMIN_URL"); u != "" {
		return u
	}
	return serverURL
}

// DB is one test's database.
type DB struct {
	Pool *pgxpool.Pool
	Q    *db.Queries
	// URL connects to this database, for subprocesses and extra pools.
	URL  string
	Name string
}

// New creates a fresh database for t from the migrated template, switches it
// to the simulated clock at SimEpoch, and drops it when t ends.
func New(t testing.TB) *DB {
	t.Helper()
	ctx := context.Background()
	serverURL := os.Getenv("DATABASE_URL")
	if serverURL == "" {
		t.Fatal("pgtest: DATABASE_URL is unset; call pgtest.Main from TestMain")
	}
	adminURL := adminURL(serverURL)
	template, err := ensureTemplate(ctx, adminURL)
	require.NoError(t, err)

	name := "t_" + randomHex(8)
	admin, err := pgx.Connect(ctx, adminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+template)
	require.NoError(t, err)

	dbURL := withDatabase(t, serverURL, name)
	pool, err := pg.Connect(ctx, dbURL, pg.PoolOptions{MaxConns: 20, IdleInTxTimeout: time.Minute, ApplicationName: t.Name()})
	require.NoError(t, err)
	t.Cleanup(func() {
		pool.Close()
		dropDatabase(t, adminURL, name)
	})
	d := &DB{Pool: pool, Q: db.New(pool), URL: dbURL, Name: name}
	d.UseSimClock(t, true)
	d.SetSimClock(t, SimEpoch)
	return d
}

// UseSimClock points compute_now() at compute_sim_clock (on) or at the real
// clock (off).
func (d *DB) UseSimClock(t testing.TB, on bool) {
	t.Helper()
	require.NoError(t, d.Q.SimClockUse(context.Background(), on))
}

// SetSimClock sets the simulated clock to ts.
func (d *DB) SetSimClock(t testing.TB, ts time.Time) {
	t.Helper()
	require.NoError(t, d.Q.SimClockSet(context.Background(), ts))
}

// AdvanceSimClock moves the simulated clock forward by by and returns the
// new time.
func (d *DB) AdvanceSimClock(t testing.TB, by time.Duration) time.Time {
	t.Helper()
	ts, err := d.Q.SimClockAdvance(context.Background(), by.Seconds())
	require.NoError(t, err)
	return ts
}

// Now reads compute_now().
func (d *DB) Now(t testing.TB) time.Time {
	t.Helper()
	ts, err := d.Q.ClockNow(context.Background())
	require.NoError(t, err)
	return ts
}

// NewEmpty creates a database with no schema at all on the test server
// (not cloned from the migrated template), for tests of what runs on one:
// migrations, a restored dump. It is dropped when t ends; its URL is
// returned.
func NewEmpty(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	serverURL := os.Getenv("DATABASE_URL")
	if serverURL == "" {
		t.Fatal("pgtest: DATABASE_URL is unset; call pgtest.Main from TestMain")
	}
	adminURL := adminURL(serverURL)
	name := "t_" + randomHex(8)
	admin, err := pgx.Connect(ctx, adminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() { dropDatabase(t, adminURL, name) })
	return withDatabase(t, serverURL, name)
}

// dropDatabase drops a test's database when it ends, saying why if it
// cannot (a leftover database costs only disk on a test server).
func dropDatabase(t testing.TB, adminURL, name string) {
	conn, err := pgx.Connect(context.Background(), adminURL)
	if err != nil {
		t.Logf("pgtest: drop %s: %v", name, err)
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		t.Logf("pgtest: drop %s: %v", name, err)
	}
}

func withDatabase(t testing.TB, serverURL, name string) string {
	u, err := url.Parse(serverURL)
	require.NoError(t, err, "DATABASE_URL must be a postgres:// URL")
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
