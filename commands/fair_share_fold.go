package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// The fair-share fold (docs/concepts/fair-share.md, "Settled usage"): one
// work-queue item that moves each tenant's settled decayed usage forward,
// so that fair_share_usage reads a tenant's live and recent allocations,
// not the ten half-lives of its history, at every run of a waiting line
// and at every GET …/fair-share.
const (
	KindFairShareFold = "fair-share.fold"
	FairShareFoldKey  = "all"
	// FairShareFoldEvery is how often the fold runs: what
	// fair_share_usage reads past the settled totals is what was released
	// in the last FairShareFoldMargin plus at most this.
	FairShareFoldEvery = 5 * time.Minute
	// FairShareFoldMargin is how far behind compute_now() the fold's
	// watermark stays. It must be longer than any write transaction: a
	// release takes its released_at from its transaction's clock and may
	// commit later, and a release committed after a fold whose watermark
	// passed its released_at would be counted neither live nor settled.
	// Write transactions last milliseconds, and idle ones are ended by
	// COMPUTE_IDLE_IN_TX_TIMEOUT.
	FairShareFoldMargin = 10 * time.Minute
)

// FairShareFoldResult is where one fold left the settled totals.
type FairShareFoldResult struct {
	// SettledAt is the watermark: every allocation released at or before
	// it is in the totals.
	SettledAt time.Time
	// Rebuilt is set when the totals were computed in full.
	Rebuilt bool
}

// foldFairShare runs one fold of the configured half-life's totals, in a
// transaction fenced by fence (nil: unfenced, for tests and tools).
func (h *Handlers) foldFairShare(ctx context.Context, fence func(pgx.Tx) error) (FairShareFoldResult, error) {
	var res FairShareFoldResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		if err := fenced(tx, fence); err != nil {
			return err
		}
		row, err := db.New(tx).FairShareFold(ctx, db.FairShareFoldParams{
			HalfLifeSeconds: h.fairShareHalfLife().Seconds(), MarginSeconds: FairShareFoldMargin.Seconds()})
		if err != nil {
			return pg.Translate(err, "fair-share totals")
		}
		res = FairShareFoldResult{SettledAt: row.SettledAt, Rebuilt: row.Rebuilt}
		return nil
	})
	if err != nil {
		return FairShareFoldResult{}, fmt.Errorf("fold fair share: %w", err)
	}
	return res, nil
}

// FairShareFold is the KindFairShareFold work-queue handler: one fold,
// fenced by the item's shard lease, then again after FairShareFoldEvery.
func (r Reconcilers) FairShareFold(ctx context.Context, it workqueue.Item) error {
	res, err := r.h.foldFairShare(ctx, fenceOf(ctx, it))
	if err != nil {
		return err
	}
	if res.Rebuilt {
		r.h.logger().Info("fair share: settled usage computed in full", "settled_at", res.SettledAt)
	}
	return workqueue.Again(FairShareFoldEvery)
}

// EnsureFairShareFold enqueues the fold item if it is missing. Workers
// call it at start; enqueueing an existing item keeps its due time.
func (h *Handlers) EnsureFairShareFold(ctx context.Context) error {
	return workqueue.Enqueue(ctx, db.New(h.Pool), KindFairShareFold, FairShareFoldKey, 0)
}
