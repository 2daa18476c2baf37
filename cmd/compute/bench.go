package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/bettercompute/compute/bench"
	"github.com/bettercompute/compute/internal/config"
)

// benchCmd is `compute bench [--quick] [--strict] [--out DIR] [--charts DIR] [--pg-dir DIR]`.
// The private cluster gets its own directory, apart from serve's, so a
// running `compute serve` does not stop a benchmark (or the reverse).
func benchCmd(ctx context.Context, cfg config.Config, logger *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "CI-size run (about a minute): short phases, 100 and 1,000 nodes")
	out := fs.String("out", filepath.Join("bench", "results"), "directory for <date>.json")
	charts := fs.String("charts", filepath.Join("docs", "benchmarks"), "directory for ratios.svg")
	pgDir := fs.String("pg-dir", filepath.Join(filepath.Dir(cfg.PGDir), "bench-pg"), "private durable cluster when DATABASE_URL is unset")
	pgbench := fs.String("pgbench", "", "pgbench program (default: PATH, then /usr/lib/postgresql/*/bin)")
	strict := fs.Bool("strict", false, "exit non-zero when a measurement failed (CI)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the compute binary for the serve measurements: %w", err)
	}
	res, err := bench.Run(ctx, bench.Config{
		Quick: *quick, DatabaseURL: cfg.DatabaseURL, PGDir: *pgDir,
		ResultsDir: *out, ChartDir: *charts, PgbenchPath: *pgbench, Binary: self,
		Progress: os.Stderr, Out: os.Stdout, Logger: logger,
		Command: "compute bench " + strings.Join(args, " "),
	})
	if err != nil {
		return err
	}
	if failed := res.Failures(); *strict && len(failed) > 0 {
		return fmt.Errorf("%d measurements failed, first: %s: %s", len(failed), failed[0].What, failed[0].Why)
	}
	return nil
}
