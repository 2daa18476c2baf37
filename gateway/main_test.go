package gateway_test

import (
	"os"
	"testing"

	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// TestMain starts the package's private PostgreSQL (unless DATABASE_URL is
// set), and turns on the InTx test hook: every write to a daemon in these
// tests fails if it happens inside a database transaction.
func TestMain(m *testing.M) {
	pg.TrackTransactions(true)
	os.Exit(pgtest.Main(m))
}
