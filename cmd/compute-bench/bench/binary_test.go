package bench

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// computeBinary builds cmd/compute once for the tests of the measurements
// that run `compute serve` as a child process (what compute-bench does at
// start).
var computeBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "compute-bench-bin-")
	if err != nil {
		return "", err
	}
	return BuildCompute(context.Background(), dir)
})

func mustComputeBinary(t *testing.T) string {
	t.Helper()
	bin, err := computeBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestServeProcess starts the real binary on a test database and reads
// its memory, one metric and its health.
func TestServeProcess(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	p, err := startServe(ctx, mustComputeBinary(t), d.URL, "api")
	require.NoError(t, err)
	defer p.stop()
	rss, err := p.rssBytes()
	require.NoError(t, err)
	require.Greater(t, rss, int64(1<<20), "a Go server is more than 1 MiB resident")
	g, err := p.metric(ctx, "go_goroutines")
	require.NoError(t, err)
	require.Positive(t, g)
	_, err = p.metric(ctx, "no_such_metric")
	require.ErrorContains(t, err, "no_such_metric")
	p.stop()
	_, err = p.rssBytes()
	require.Error(t, err, "a stopped process has no /proc entry")
}
