package bench

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/cluster"
)

// The replica suite on a private cluster of its own (a standby is made of
// the whole cluster): both servers answer every query, and the figures
// are there.
func TestReplicaMeasurementsShape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, err := os.MkdirTemp("", "compute-bench-replica-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(base, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	c, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(base, "primary"), Fast: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	srv := &server{url: c.URL("postgres"), private: true, cluster: c, tag: runTag()}
	t.Cleanup(srv.close)

	p := tinyPlan()
	r, err := onFreshDatabase(ctx, srv, "replica", func(url string) (ReplicaResult, error) {
		return replicaSuite(ctx, srv, url, p, newProgress(io.Discard))
	})
	require.NoError(t, err)
	require.Equal(t, p.replicaReservations, r.Reservations)
	require.Positive(t, r.PrimaryQPS)
	require.Positive(t, r.ReplicaQPS)
	require.NotEmpty(t, r.ratios(), "at least the throughput ratio (the CPU one needs a tick of the primary's)")
}
