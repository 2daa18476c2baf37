package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// The first start prints one operator token, and the command it suggests
// names this binary as it was started (a release install's path, not the
// repository's ./bin/compute); a second start prints nothing.
func TestBootstrapTokenIsPrintedOnceWithThisBinary(t *testing.T) {
	d := pgtest.New(t)
	var out bytes.Buffer
	require.NoError(t, printBootstrapToken(context.Background(), d.Pool, "127.0.0.1:8080", &out, slog.New(slog.DiscardHandler)))
	require.Contains(t, out.String(), "\n  "+os.Args[0]+" tokens create --tenant acme")
	require.Equal(t, 1, strings.Count(out.String(), "export COMPUTE_SERVER=http://127.0.0.1:8080 COMPUTE_TOKEN=bc_"))

	out.Reset()
	require.NoError(t, printBootstrapToken(context.Background(), d.Pool, "127.0.0.1:8080", &out, slog.New(slog.DiscardHandler)))
	require.Empty(t, out.String(), "a token exists: nothing is issued")
}
