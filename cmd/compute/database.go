package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/cluster"
	"github.com/bettercompute/compute/internal/pg/migrate"
	"github.com/bettercompute/compute/outbox"
)

// errPrivateClusterBusy is openDatabase's error when the private cluster
// is already running in another process.
var errPrivateClusterBusy = errors.New("the private PostgreSQL is in use")

// openDatabase connects to cfg.DatabaseURL, or starts the private cluster in
// cfg.PGDir when it is unset, and applies migrations. The private cluster
// listens on no TCP address, only on a unix socket in a directory of mode
// 0700 owned by the server's user (postgres when we are root): its
// authentication is trust, and on a machine that also runs tenants'
// workloads (the demo's in-process daemons, a node) any local process could
// otherwise connect as superuser. The returned close
// function closes the pool and stops a cluster it started. The URL is
// returned for connections that must not go through the pool (LISTEN).
func openDatabase(ctx context.Context, cfg config.Config, logger *slog.Logger, appName string) (*pgxpool.Pool, string, func(), error) {
	return openDatabaseSchema(ctx, cfg, logger, appName, true)
}

// openMigratedDatabase is openDatabase for a command that must change
// nothing, `compute check`: it applies no migration, and refuses a
// database that lacks some of this binary's. An operator runs the new
// release's check beside the old release's processes, before choosing
// when to migrate (docs/operations/deploy.md, Upgrading); a check that
// migrated did it for them, under those processes.
func openMigratedDatabase(ctx context.Context, cfg config.Config, logger *slog.Logger, appName string) (*pgxpool.Pool, string, func(), error) {
	return openDatabaseSchema(ctx, cfg, logger, appName, false)
}

func openDatabaseSchema(ctx context.Context, cfg config.Config, logger *slog.Logger, appName string,
	apply bool) (*pgxpool.Pool, string, func(), error) {
	url := cfg.DatabaseURL
	stopCluster := func() {}
	if url == "" {
		cluster, err := cluster.Start(ctx, cluster.Options{Dir: cfg.PGDir, Logger: logger, SocketOnly: true})
		if err != nil && strings.Contains(err.Error(), "in use by another running process") {
			return nil, "", nil, fmt.Errorf("%w: the private PostgreSQL in %s serves one process at a time, most likely a running "+
				"`compute serve`; stop it first, or set DATABASE_URL to the url its log gave at start (\"private postgres started\") "+
				"to use its database alongside it", errPrivateClusterBusy, cfg.PGDir)
		}
		if err != nil {
			return nil, "", nil, fmt.Errorf("start private postgres: %w", err)
		}
		logger.Info("private postgres started", "dir", cluster.Dir(), "url", cluster.URL("postgres"))
		url = cluster.URL("postgres")
		stopCluster = func() {
			if err := cluster.Stop(); err != nil {
				logger.Error("stop private postgres", "err", err)
			}
		}
	}
	pool, err := pg.Connect(ctx, url, pg.PoolOptions{
		MaxConns: cfg.MaxConns, IdleInTxTimeout: cfg.IdleInTxTimeout,
		PgBouncer: cfg.PgBouncer, ApplicationName: appName,
	})
	if err != nil {
		stopCluster()
		return nil, "", nil, err
	}
	if apply {
		err = migrate.Up(ctx, pool)
	} else {
		err = requireMigrated(ctx, pool, appName)
	}
	if err != nil {
		pool.Close()
		stopCluster()
		return nil, "", nil, err
	}
	// Before anything is written: a database restored into a cluster
	// whose transaction ids are behind its log's would number what it
	// writes where no reader of the log looks.
	if err := outbox.CheckNumbering(ctx, pool); err != nil {
		pool.Close()
		stopCluster()
		return nil, "", nil, err
	}
	outbox.InstallNotifier(pool, nil, logger)
	return pool, url, func() { closePool(pool); stopCluster() }, nil
}

// closePool closes a pool once the notifications of its last appends are
// out (briefly bounded): a short-lived command's append is announced to
// the listening processes instead of waiting for their next poll.
func closePool(pool *pgxpool.Pool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = outbox.InstallNotifier(pool, nil, nil).Wait(ctx)
	pool.Close()
}

func migrateCmd(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	_, _, closeDB, err := openDatabase(ctx, cfg, logger, "compute-migrate")
	if err != nil {
		return err
	}
	closeDB()
	logger.Info("migrations applied")
	return nil
}

// requireMigrated fails when the database is behind this binary's schema.
func requireMigrated(ctx context.Context, pool *pgxpool.Pool, appName string) error {
	current, latest, err := migrate.Versions(ctx, pool)
	if err != nil {
		return err
	}
	if current < latest {
		return fmt.Errorf("the database is at migration %04d and this release's schema at %04d: %s changes nothing, "+
			"so it does not migrate; run `compute migrate` first (docs/operations/deploy.md, Upgrading)", current, latest,
			strings.TrimPrefix(appName, "compute-"))
	}
	return nil
}
