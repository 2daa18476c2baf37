package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/projections"
)

// checkCmd runs the capacity invariants against a live database: the same
// queries the torture test uses, for operators who want proof, not trust.
// It also reports drift: nodes whose observed generation has lagged their
// generation for longer than the resync period (COMPUTE_NODE_RESYNC_EVERY).
// Drift is reported, not a failure: a node away for long is drift too.
// So is what is overdue for pruning, per table. Last it holds the read
// models to the write model (readModelDivergence): a row that disagrees
// although its projection has applied every event of it is a failure, as
// a violation is; a row its projection has yet to reach is only lag.
func checkCmd(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	return checkTo(ctx, os.Stdout, cfg, logger)
}

// checkTo is checkCmd writing its report to out.
func checkTo(ctx context.Context, out io.Writer, cfg config.Config, logger *slog.Logger) error {
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
		fmt.Fprintln(out, d)
	}
	fmt.Fprintf(out, "%d nodes drifting\n", len(drift))
	overdue, err := retentionOverdue(ctx, pool, cfg)
	if err != nil {
		return err
	}
	for _, line := range overdue {
		fmt.Fprintln(out, line)
	}
	violations, err := audit.Invariants(ctx)
	if err != nil {
		return err
	}
	for _, v := range violations {
		fmt.Fprintf(out, "VIOLATION %s: %s\n", v.Invariant, v.Detail)
	}
	fmt.Fprintf(out, "%d invariant violations\n", len(violations))
	lines, diverging, err := readModelDivergence(ctx, pool)
	if err != nil {
		return err
	}
	for _, line := range lines {
		fmt.Fprintln(out, line)
	}
	fmt.Fprintf(out, "%d read-model rows diverging\n", diverging)
	switch {
	case len(violations) > 0 && diverging > 0:
		return fmt.Errorf("%d invariant violations, %d read-model rows diverging", len(violations), diverging)
	case len(violations) > 0:
		return fmt.Errorf("%d invariant violations", len(violations))
	case diverging > 0:
		return fmt.Errorf("%d read-model rows diverging", diverging)
	}
	return nil
}

// divergenceSample is how many diverging rows of each read model
// readModelDivergence names; it counts them all.
const divergenceSample = 20

// readModelDivergence describes, for each read model that mirrors write
// tables (projections.CheckAgainstWriteModel), the rows that disagree with
// them, one line each (the first divergenceSample), and one line per read
// model that has any, with the rows merely behind and the command that
// repairs it. It returns the diverging rows' count.
func readModelDivergence(ctx context.Context, pool *pgxpool.Pool) ([]string, int64, error) {
	checks, err := projections.CheckAgainstWriteModel(ctx, pool, divergenceSample)
	if err != nil {
		return nil, 0, fmt.Errorf("read models: %w", err)
	}
	var out []string
	var total int64
	for _, c := range checks {
		total += c.Diverging
		for _, r := range c.Rows {
			out = append(out, fmt.Sprintf("DIVERGENCE %s %s: %s", c.Table, r.Key, divergenceWords(r.Kind)))
		}
		switch {
		case c.Diverging > 0:
			line := fmt.Sprintf("READ MODEL %s: %d rows diverging", c.Table, c.Diverging)
			if more := c.Diverging - int64(len(c.Rows)); more > 0 {
				line += fmt.Sprintf(" (%d not named)", more)
			}
			out = append(out, fmt.Sprintf("%s, %d behind the %s projection; repair: %s", line, c.Behind, c.Projection, c.Repair()))
		case c.Behind > 0:
			out = append(out, fmt.Sprintf("READ MODEL %s: 0 rows diverging, %d behind the %s projection (not yet applied)",
				c.Table, c.Behind, c.Projection))
		}
	}
	return out, total, nil
}

// divergenceWords says a kind of divergence to an operator.
func divergenceWords(kind string) string {
	switch kind {
	case projections.DivergenceMissing:
		return "missing from the read model"
	case projections.DivergenceExtra:
		return "in the read model, not in the write model"
	default:
		return "differs from the write model"
	}
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
