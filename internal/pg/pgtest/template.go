package pgtest

import (
	"context"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/migrate"
)

// templateLockKey serialises template creation across the test binaries of
// one `go test ./...` run, which share one server.
const templateLockKey = 0x636f6d70 // "comp"

// ensureTemplate returns the name of a migrated template database for the
// current migrations, creating it once per server. The name carries a
// fingerprint of the migrations, so editing one builds a fresh template.
// A template left half-built by a crashed run is not marked IS_TEMPLATE and is
// rebuilt.
func ensureTemplate(ctx context.Context, serverURL string) (string, error) {
	fp, err := migrate.Fingerprint()
	if err != nil {
		return "", err
	}
	name := "compute_tmpl_" + fp
	admin, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", fmt.Errorf("connect to test server: %w", err)
	}
	defer admin.Close(ctx)
	// Test-only administration: these statements name databases, which
	// cannot be query parameters, so they are not sqlc queries.
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		return "", err
	}
	defer admin.Exec(ctx, "SELECT pg_advisory_unlock($1)", templateLockKey)

	var isTemplate bool
	err = admin.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", name).Scan(&isTemplate)
	switch {
	case err == nil && isTemplate:
		return name, nil
	case err == nil:
		if _, err := admin.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			return "", err
		}
	case err != pgx.ErrNoRows:
		return "", err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	pool, err := pg.Connect(ctx, u.String(), pg.PoolOptions{MaxConns: 2})
	if err != nil {
		return "", err
	}
	err = migrate.Up(ctx, pool)
	pool.Close()
	if err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+name+" IS_TEMPLATE true"); err != nil {
		return "", err
	}
	return name, nil
}
