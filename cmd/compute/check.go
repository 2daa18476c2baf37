package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/internal/config"
)

// checkCmd runs the capacity invariants against a live database: the same
// queries the torture test uses, for operators who want proof, not trust.
// It also reports drift: nodes whose observed generation has lagged their
// generation for longer than the resync period (COMPUTE_NODE_RESYNC_EVERY).
// Drift is reported, not a failure: a node away for long is drift too.
// So is what is overdue for pruning, per table.
func checkCmd(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	pool, _, closeDB, err := openMigratedDatabase(ctx, cfg, logger, "compute-check")
	if err != nil {
		return err
	}
	defer closeDB()
	audit := &commands.Audit{Pool: pool}
	drift, err := nodeDrift(ctx, audit, cfg.NodeResyncEvery)
	if err != nil {
		return err
	}
	for _, d := range drift {
		fmt.Println(d)
	}
	fmt.Printf("%d nodes drifting\n", len(drift))
	overdue, err := retentionOverdue(ctx, pool, cfg)
	if err != nil {
		return err
	}
	for _, line := range overdue {
		fmt.Println(line)
	}
	violations, err := audit.Invariants(ctx)
	if err != nil {
		return err
	}
	for _, v := range violations {
		fmt.Printf("VIOLATION %s: %s\n", v.Invariant, v.Detail)
	}
	if len(violations) > 0 {
		return fmt.Errorf("%d invariant violations", len(violations))
	}
	fmt.Println("0 invariant violations")
	return nil
}

// retentionOverdue describes, one line per table, the rows older than
// their retention that are still there (the pruner runs every
// COMPUTE_PRUNE_EVERY; rows it is held back from stay overdue). Like drift,
// it is reported, not a failure.
func retentionOverdue(ctx context.Context, pool *pgxpool.Pool, cfg config.Config) ([]string, error) {
	rows, err := (&commands.Pruner{Pool: pool, Retention: retentionConfig(cfg)}).Overdue(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("RETENTION %s: %d rows overdue for pruning (%s)", r.Table, r.Rows, r.Rule)
		if r.HeldBy != "" {
			out[i] += "; pruning stops at the slowest " + r.HeldBy
		}
	}
	return out, nil
}

// nodeDrift describes, one line each, the nodes whose observed generation
// has lagged their generation for longer than after: one of their assign
// or unassign jobs has been open that long (a lag without one is caught up
// at the daemon's next report or the node's next resync).
func nodeDrift(ctx context.Context, audit *commands.Audit, after time.Duration) ([]string, error) {
	rows, err := audit.NodeDrift(ctx, after)
	if err != nil {
		return nil, fmt.Errorf("node drift: %w", err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		conn := "connected"
		if !r.Connected {
			conn = "not connected"
		}
		out[i] = fmt.Sprintf("DRIFT node %s: generation %d, observed %d; %d assignment jobs open, the oldest since %s (%s)",
			r.NodeID, r.Generation, r.ObservedGeneration, r.OpenJobs, r.OldestOpen.UTC().Format(time.RFC3339), conn)
	}
	return out, nil
}
