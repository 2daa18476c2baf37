// Command compute-bench measures the control plane against pgbench on a
// durable PostgreSQL (docs/benchmarks.md). It is a program of its own, so
// nothing of the benchmark is linked into the compute server: the
// end-to-end measurements run a compute binary it builds from ./cmd/compute
// (or the one --compute names) as `compute serve` child processes.
//
//	compute-bench [--quick] [--strict] [--out DIR] [--charts DIR] [--pg-dir DIR] [--pgbench PATH] [--compute PATH]
//
// `make bench ARGS=...` runs it with `go run`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"

	"github.com/bettercompute/compute/cmd/compute-bench/bench"
	"github.com/bettercompute/compute/internal/config"
)

func main() {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	logger := newLogger(cfg.LogLevel)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, logger, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		logger.Error("compute-bench failed", "err", err)
		os.Exit(1)
	}
}

// run parses the flags and performs one benchmark. The private cluster gets
// its own directory, apart from serve's, so a running `compute serve` does
// not stop a benchmark (or the reverse).
func run(ctx context.Context, cfg config.Config, logger *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("compute-bench", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "CI-size run (about a minute): short phases, 100 and 1,000 nodes")
	out := fs.String("out", filepath.Join("bench", "results"), "directory for <date>.json")
	charts := fs.String("charts", filepath.Join("docs", "benchmarks"), "directory for ratios.svg")
	pgDir := fs.String("pg-dir", filepath.Join(filepath.Dir(cfg.PGDir), "bench-pg"), "private durable cluster when DATABASE_URL is unset")
	pgbench := fs.String("pgbench", "", "pgbench program (default: PATH, then /usr/lib/postgresql/*/bin)")
	compute := fs.String("compute", "", "compute binary run as `compute serve` child processes (default: build ./cmd/compute into a temporary directory)")
	strict := fs.Bool("strict", false, "exit non-zero when a measurement failed (CI)")
	spread := fs.Bool("spread", false, "measure nothing: print each figure of the result files given as arguments as median [min–max]")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (the in-process write path and the load clients) to `file`, for go tool pprof")
	only := fs.String("only", "", "run only these suites, comma-separated ("+strings.Join(bench.Suites, ", ")+"); the rest are recorded as not measured")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var suites []string
	if *only != "" {
		for name := range strings.SplitSeq(*only, ",") {
			if !slices.Contains(bench.Suites, name) {
				return fmt.Errorf("--only: unknown suite %q (want %s)", name, strings.Join(bench.Suites, ", "))
			}
			suites = append(suites, name)
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if *spread {
		return bench.Spread(os.Stdout, fs.Args())
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	binary := *compute
	if binary == "" {
		dir, err := os.MkdirTemp("", "compute-bench-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "building ./cmd/compute for the serve measurements")
		if binary, err = bench.BuildCompute(ctx, dir); err != nil {
			return fmt.Errorf("build the compute binary for the serve measurements: %w", err)
		}
	}
	res, err := bench.Run(ctx, bench.Config{
		Quick: *quick, DatabaseURL: cfg.DatabaseURL, PGDir: *pgDir,
		ResultsDir: *out, ChartDir: *charts, PgbenchPath: *pgbench, Binary: binary,
		Progress: os.Stderr, Out: os.Stdout, Logger: logger,
		Command: strings.TrimSpace("compute-bench " + strings.Join(args, " ")), Only: suites, MaxConns: cfg.MaxConns,
	})
	if err != nil {
		return err
	}
	if failed := res.Failures(); *strict && len(failed) > 0 {
		return fmt.Errorf("%d measurements failed, first: %s: %s", len(failed), failed[0].What, failed[0].Why)
	}
	return nil
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}
