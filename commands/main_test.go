package commands_test

import (
	"os"
	"testing"

	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// TestMain starts the package's private PostgreSQL (unless DATABASE_URL is
// set). It is the only TestMain of the commands test binary.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
