package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/bettercompute/compute/cmd/compute-bench/benchdb"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
)

// drainBatch is the batch size of the drain measurement, the dispatcher's
// order of magnitude.
const drainBatch = 500

// backlogReads replaces the outbox with a synthetic backlog of n committed
// events and times `reads` batches of 100 read from its middle — the
// question being whether a reader far behind pays more per batch.
func backlogReads(ctx context.Context, pool db.DBTX, n, reads int) (BacklogPoint, error) {
	if err := seedBacklog(ctx, benchdb.New(pool), n); err != nil {
		return BacklogPoint{}, err
	}
	mid, err := benchdb.New(pool).BenchOutboxPositionAt(ctx, int64(n/2))
	if err != nil {
		return BacklogPoint{}, fmt.Errorf("middle of the backlog: %w", err)
	}
	from := outbox.Position{TxID: mid.Txid, Seq: mid.Seq}
	q := db.New(pool)
	lat := make([]time.Duration, 0, reads)
	// The first reads after the seed pay for planning and a cold cache;
	// they are not the steady cost the question is about.
	for range reads/5 + 1 {
		if _, err := outbox.ReadAfter(ctx, q, from, 100); err != nil {
			return BacklogPoint{}, err
		}
	}
	for range reads {
		t0 := time.Now()
		got, err := outbox.ReadAfter(ctx, q, from, 100)
		if err != nil {
			return BacklogPoint{}, err
		}
		if len(got) != min(100, n-n/2-1) {
			return BacklogPoint{}, fmt.Errorf("read %d events from the middle of %d", len(got), n)
		}
		lat = append(lat, time.Since(t0))
	}
	return BacklogPoint{Events: n, P50Ms: percentileMs(lat, 0.50), P99Ms: percentileMs(lat, 0.99)}, nil
}

// seedBacklog empties the outbox and inserts n events in one statement,
// spread over transaction ids below the frontier so that ReadAfter sees
// them all as committed.
func seedBacklog(ctx context.Context, q *benchdb.Queries, n int) error {
	if err := q.BenchOutboxTruncate(ctx); err != nil {
		return fmt.Errorf("empty outbox: %w", err)
	}
	xmin, err := q.BenchOutboxFrontier(ctx)
	if err != nil {
		return err
	}
	if xmin < 10 {
		return fmt.Errorf("frontier xid %d too low to place a backlog under", xmin)
	}
	perTx := max(1, (int64(n)+xmin-3)/(xmin-2))
	if err := q.BenchOutboxSeed(ctx, benchdb.BenchOutboxSeedParams{PerTx: perTx, N: int64(n)}); err != nil {
		return fmt.Errorf("seed backlog of %d: %w", n, err)
	}
	return q.BenchOutboxAnalyze(ctx)
}

// drain reads the whole outbox from the start in batches, as a reader that
// fell behind would, and returns events per second (bounded by limit).
func drain(ctx context.Context, q *db.Queries, limit time.Duration) (float64, error) {
	start := time.Now()
	var pos outbox.Position
	total := 0
	for time.Since(start) < limit {
		got, err := outbox.ReadAfter(ctx, q, pos, drainBatch)
		if err != nil {
			return 0, err
		}
		if len(got) == 0 {
			break
		}
		total += len(got)
		pos = got[len(got)-1].Position
	}
	if total == 0 {
		return 0, fmt.Errorf("drain read nothing")
	}
	return float64(total) / time.Since(start).Seconds(), nil
}
