package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/cmd/compute-bench/benchdb"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/cluster"
)

// server is the PostgreSQL the benchmark runs on: a private durable cluster
// it started, or the one DATABASE_URL names.
type server struct {
	url     string // the maintenance database ("postgres")
	private bool
	cluster *cluster.Cluster
	tag     string   // suffix of this run's database names
	created []string // databases to drop on close
}

// openServer starts the private cluster without Fast: fsync and
// synchronous_commit stay on, because the comparison with pgbench is about
// commits that survive a crash, and turning durability off would flatter
// whichever side commits more often.
func openServer(ctx context.Context, cfg Config) (*server, error) {
	if cfg.DatabaseURL != "" {
		return &server{url: cfg.DatabaseURL, tag: runTag()}, nil
	}
	if cfg.PGDir == "" {
		return nil, errors.New("bench: no DatabaseURL and no PGDir")
	}
	c, err := cluster.Start(ctx, cluster.Options{Dir: cfg.PGDir, Fast: false, Logger: cfg.Logger,
		Preload: []string{"pg_stat_statements"}})
	if err != nil {
		return nil, fmt.Errorf("start durable postgres: %w", err)
	}
	return &server{url: c.URL("postgres"), private: true, cluster: c, tag: runTag()}, nil
}

// runTag keeps two runs on one server (or a run and a test suite) from
// dropping each other's databases.
func runTag() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// dbURL is the URL of another database on the same server, with extra
// session settings (pgx sends unknown URL parameters as run-time
// parameters, e.g. synchronous_commit=off).
func (s *server) dbURL(name string, params map[string]string) string {
	u, err := url.Parse(s.url)
	if err != nil {
		return s.url // openServer's URL parsed once already; cannot happen
	}
	u.Path = "/" + name
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// freshDatabase creates an empty database bench_<name>_<tag> and returns
// its URL; close drops it. Names are identifiers made here, never input.
func (s *server) freshDatabase(ctx context.Context, name string) (string, error) {
	name = "bench_" + name + "_" + s.tag
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", s.url, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	s.created = append(s.created, name)
	return s.dbURL(name, nil), nil
}

// describe records the machine and the server settings the figures depend on.
func (s *server) describe(ctx context.Context, m *Machine) error {
	m.Cores = runtime.NumCPU()
	m.GOOS, m.GOARCH, m.GoVersion = runtime.GOOS, runtime.GOARCH, runtime.Version()
	m.Hostname, _ = os.Hostname()
	m.PrivateCluster = s.private
	pool, err := pg.Connect(ctx, s.url, pg.PoolOptions{MaxConns: 1, ApplicationName: "compute-bench"})
	if err != nil {
		return err
	}
	defer pool.Close()
	rows, err := benchdb.New(pool).BenchSettings(ctx, []string{"server_version", "fsync", "synchronous_commit",
		"full_page_writes", "wal_sync_method", "shared_buffers", "max_connections", "max_wal_size",
		"checkpoint_timeout", "wal_level", "max_locks_per_transaction"})
	if err != nil {
		return fmt.Errorf("read server settings: %w", err)
	}
	m.Settings = map[string]string{}
	for _, r := range rows {
		m.Settings[r.Name] = r.Setting
	}
	m.PGVersion = m.Settings["server_version"]
	return nil
}

// close drops the databases this run created (the server keeps no bench
// data between runs) and stops a private cluster.
func (s *server) close() {
	ctx := context.Background()
	if conn, err := pgx.Connect(ctx, s.url); err == nil {
		for _, name := range s.created {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		}
		_ = conn.Close(ctx)
	}
	if s.cluster != nil {
		_ = s.cluster.Stop()
	}
}

// onFreshDatabase runs suite on a database of its own (freshDatabase), so
// that what one measurement writes — a backlog, a fleet, streams — is not
// in another's figures.
func onFreshDatabase[T any](ctx context.Context, srv *server, name string, suite func(url string) (T, error)) (T, error) {
	url, err := srv.freshDatabase(ctx, name)
	if err != nil {
		var zero T
		return zero, err
	}
	return suite(url)
}
