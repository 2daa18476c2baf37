package torture

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestTorture is `compute torture --ops 1000`: the run must pass every
// check of Report.Failures, which the tests below show can fail.
func TestTorture(t *testing.T) {
	rep, err := RunOnServer(context.Background(), os.Getenv("DATABASE_URL"), Options{Ops: 1000, Seed: 1, Keep: os.Getenv("TORTURE_KEEP") != "",
		AdminURL: os.Getenv("PGTEST_ADMIN_URL")})
	require.NoError(t, err)
	var b strings.Builder
	rep.Write(&b)
	t.Log("\n" + b.String())
	require.Empty(t, rep.Failures())
	require.Zero(t, rep.ViolationCount())
	require.True(t, strings.HasSuffix(b.String(), "torture: 1000 ops, 0 violations\n"))
}
