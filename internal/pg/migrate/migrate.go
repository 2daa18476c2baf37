// Package migrate applies the embedded schema migrations with goose, a
// well-kept migrator, rather than a home-made runner.
package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/bettercompute/compute/sql"
)

// Up applies every pending migration. goose speaks database/sql, so the pgx
// pool is wrapped for the duration of the run.
//
// Every process applies the migrations when it starts, and processes start
// together (an API and a worker of one deploy): the run holds goose's lock,
// so one applies them and the others wait for it, then find nothing to do.
// Unlocked, two of them created the same objects at once and one failed.
// The lock is a row in a table of goose's (goose_lock) with a lease that a
// heartbeat renews, not a session advisory lock, so that it holds through
// PgBouncer's transaction pooling; a process that dies holding it leaves
// it to the others when its lease lapses (30 s).
func Up(ctx context.Context, pool *pgxpool.Pool) error {
	fsys, err := fs.Sub(sql.Migrations, "migrations")
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	locker, err := lock.NewPostgresTableLocker(lock.WithTableLockTimeout(lockRetry, lockRetries))
	if err != nil {
		return fmt.Errorf("migrations lock: %w", err)
	}
	sqldb := stdlib.OpenDBFromPool(pool)
	defer sqldb.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, sqldb, fsys, goose.WithLocker(locker))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}

// Versions returns the newest migration applied to the database (0 for an
// empty one) and the newest this binary has, without taking the lock or
// writing anything: for a command that must not migrate (compute check).
func Versions(ctx context.Context, pool *pgxpool.Pool) (current, latest int64, err error) {
	fsys, err := fs.Sub(sql.Migrations, "migrations")
	if err != nil {
		return 0, 0, fmt.Errorf("migrations: %w", err)
	}
	sqldb := stdlib.OpenDBFromPool(pool)
	defer sqldb.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, sqldb, fsys)
	if err != nil {
		return 0, 0, fmt.Errorf("migrations: %w", err)
	}
	sources := provider.ListSources()
	latest = sources[len(sources)-1].Version
	var table *string
	if err := pool.QueryRow(ctx, `SELECT to_regclass('goose_db_version')::text`).Scan(&table); err != nil {
		return 0, 0, fmt.Errorf("migration version: %w", err)
	}
	if table == nil {
		return 0, latest, nil
	}
	current, err = provider.GetDBVersion(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("migration version: %w", err)
	}
	return current, latest, nil
}

// A process waiting for another's migrations tries the lock every
// lockRetry, for as long as a slow migration of a large table may take.
const (
	lockRetry   = time.Second
	lockRetries = 15 * 60
)

// Fingerprint is a digest of every migration file: the test template database
// is named after it, so a changed migration builds a new template.
func Fingerprint() (string, error) {
	entries, err := fs.ReadDir(sql.Migrations, "migrations")
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := fs.ReadFile(sql.Migrations, "migrations/"+n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}
