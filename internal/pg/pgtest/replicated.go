package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/cluster"
	"github.com/bettercompute/compute/internal/pg/migrate"
)

// Replicated is a primary of its own with one migrated database, on the
// simulated clock at SimEpoch, and a hot standby streaming from it.
type Replicated struct {
	// DB is the primary's database, as New gives a test its own.
	*DB
	Primary, Standby       *cluster.Cluster
	PrimaryURL, StandbyURL string // the database on each
	// PrimaryPool and StandbyPool are pools on them, closed at cleanup.
	PrimaryPool, StandbyPool *pgxpool.Pool
}

// NewReplicated starts a primary and its standby for one test (a few
// seconds: initdb, the migrations, pg_basebackup), independent of the
// shared server the other tests use, whose every database a base backup
// would copy. Both are stopped and removed at cleanup.
func NewReplicated(t testing.TB) *Replicated {
	t.Helper()
	ctx := context.Background()
	base, err := os.MkdirTemp("", "compute-pgtest-replicated-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(base, 0o755)) // the postgres OS user must enter it
	t.Cleanup(func() { _ = os.RemoveAll(base) })

	primary, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(base, "primary"), Fast: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = primary.Stop(); _ = os.RemoveAll(primary.Dir()) })
	admin, err := pg.Connect(ctx, primary.URL("postgres"), pg.PoolOptions{MaxConns: 1})
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "CREATE DATABASE compute")
	admin.Close()
	require.NoError(t, err)
	r := &Replicated{Primary: primary, PrimaryURL: primary.URL("compute")}
	r.PrimaryPool, err = pg.Connect(ctx, r.PrimaryURL, pg.PoolOptions{MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(r.PrimaryPool.Close)
	require.NoError(t, migrate.Up(ctx, r.PrimaryPool))
	r.DB = &DB{Pool: r.PrimaryPool, Q: db.New(r.PrimaryPool), URL: r.PrimaryURL, Name: "compute"}
	r.UseSimClock(t, true)
	r.SetSimClock(t, SimEpoch)

	r.Standby, err = primary.StartStandby(ctx, cluster.Options{Dir: filepath.Join(base, "standby"), Fast: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Standby.Stop(); _ = os.RemoveAll(r.Standby.Dir()) })
	r.StandbyURL = r.Standby.URL("compute")
	r.StandbyPool, err = pg.Connect(ctx, r.StandbyURL, pg.PoolOptions{MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(r.StandbyPool.Close)
	return r
}
