package torture

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/multitracer"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/internal/db"
)

// One rush reaches the replan cap: its placers all decide on the same free
// nodes (rushBarrier), so the ones that lose a node replan against nodes
// taken meanwhile until they give up. The run's check that the cap was
// reached rests on this, whatever the machine's load.
func TestRushReachesTheReplanCap(t *testing.T) {
	ctx := context.Background()
	s, err := openScratch(ctx, os.Getenv("DATABASE_URL"), os.Getenv("PGTEST_ADMIN_URL"), 24,
		multitracer.New(newDeadlockTracer(), rushTracer{}))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.drop(context.WithoutCancel(ctx))) })
	r := &run{pool: s.Pool, q: db.New(s.Pool), hist: newHistory(), ids: newReservationIDs(), tally: newTally(),
		sessions: map[string]int64{}}
	r.h = commands.New(s.Pool, commands.Config{Test: commands.TestConfig{NodesWithoutDaemons: true,
		ReplanCapReached: func() { r.capHit.Add(1) }}})
	r.fleet, err = seed(ctx, r.h, r.q, batchGrace(1))
	require.NoError(t, err)

	require.NoError(t, r.rush(ctx))
	t.Logf("creates: %v; replan cap reached %d times", r.tally.snapshot()["create"], r.capHit.Load())
	require.Positive(t, r.capHit.Load())
}
