package torture

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/migrate"
)

// Epoch is where the scratch database's simulated clock starts.
var Epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// scratchPrefix starts every scratch database's name, so that one left by a
// killed run is recognisable.
const scratchPrefix = "compute_torture_"

// scratch is a database of its own on the server, created for one run and
// dropped after it: the torture never touches the product's database.
type scratch struct {
	adminURL string
	name     string
	Pool     *pgxpool.Pool
}

// openScratch creates a fresh database on the server (through adminURL, or
// serverURL when it is empty), connects to it through serverURL, migrates
// it, and moves its compute_now() onto the simulated clock at Epoch. The
// pool has the tracer and room for conns connections.
func openScratch(ctx context.Context, serverURL, adminURL string, conns int32, tracer pgx.QueryTracer) (*scratch, error) {
	if adminURL == "" {
		adminURL = serverURL
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := scratchPrefix + hex.EncodeToString(b)
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return nil, fmt.Errorf("connect to the server: %w", err)
	}
	defer admin.Close(ctx)
	// A database name cannot be a query parameter: name is ours, hex only.
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("create scratch database: %w", err)
	}
	s := &scratch{adminURL: adminURL, name: name}
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, s.dropAfter(ctx, fmt.Errorf("database url: %w", err))
	}
	u.Path = "/" + name
	s.Pool, err = pg.Connect(ctx, u.String(), pg.PoolOptions{MaxConns: conns, IdleInTxTimeout: time.Minute,
		ApplicationName: "compute-torture", Tracer: tracer})
	if err != nil {
		return nil, s.dropAfter(ctx, err)
	}
	if err := migrate.Up(ctx, s.Pool); err != nil {
		return nil, s.dropAfter(ctx, err)
	}
	q := db.New(s.Pool)
	if err := q.SimClockUse(ctx, true); err != nil {
		return nil, s.dropAfter(ctx, fmt.Errorf("simulated clock: %w", err))
	}
	if err := q.SimClockSet(ctx, Epoch); err != nil {
		return nil, s.dropAfter(ctx, fmt.Errorf("simulated clock: %w", err))
	}
	return s, nil
}

// dropAfter drops the database after err and returns err.
func (s *scratch) dropAfter(ctx context.Context, err error) error {
	if derr := s.drop(ctx); derr != nil {
		return fmt.Errorf("%w (and %v)", err, derr)
	}
	return err
}

// drop closes the pool and drops the database.
func (s *scratch) drop(ctx context.Context) error {
	if s.Pool != nil {
		s.Pool.Close()
	}
	admin, err := pgx.Connect(ctx, s.adminURL)
	if err != nil {
		return fmt.Errorf("drop scratch database %s: %w", s.name, err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+s.name+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop scratch database %s: %w", s.name, err)
	}
	return nil
}
