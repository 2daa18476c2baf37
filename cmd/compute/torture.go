package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/bettercompute/compute/cmd/compute/cli"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/pg/cluster"
	"github.com/bettercompute/compute/torture"
)

// tortureCmd runs `compute torture`: the capacity core under concurrent
// load and operator churn, judged by the invariants, a linearizability
// check and PostgreSQL's deadlock errors (package torture). It never runs
// in the product's database: with DATABASE_URL set it creates and drops a
// scratch database on that server; unset, it starts a private PostgreSQL
// in a temporary directory (so it runs beside `make run`) and removes it.
func tortureCmd(ctx context.Context, cfg config.Config, logger *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("torture", flag.ContinueOnError)
	// A bad flag is said once, as `compute: <error>` naming the flag meant
	// and the --help hint (serverRun, plainErrors), not followed by the
	// parser's flag list: `compute torture --help` prints the flags.
	fs.SetOutput(io.Discard)
	var opts torture.Options
	fs.IntVar(&opts.Ops, "ops", 1000, "operations to run in all (at least 1000)")
	fs.IntVar(&opts.Concurrency, "concurrency", 32, "goroutines running them")
	fs.IntVar(&opts.CheckEvery, "check-every", 100, "operations between invariant checks")
	fs.Uint64Var(&opts.Seed, "seed", 1, "seed of the operation choices")
	fs.BoolVar(&opts.Keep, "keep", false, "keep the scratch database when the run fails (needs DATABASE_URL)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return badFlags{cli.GoFlagError(fs, err)}
	}
	if opts.Ops < torture.MinOps {
		return badFlags{fmt.Errorf("--ops %d: a run of fewer than %d operations cannot pass: it is judged by what it "+
			"exercised too (the replan cap reached, a preemption seen), which takes that many", opts.Ops, torture.MinOps)}
	}
	// The background's lost races are the point of the run, not news:
	// only errors are logged.
	opts.Logger = newLogger("error")
	serverURL := cfg.DatabaseURL
	if serverURL == "" {
		dir, err := os.MkdirTemp("", "compute-torture-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		// MkdirTemp makes the directory 0700; the postgres OS user must enter it.
		if err := os.Chmod(dir, 0o755); err != nil {
			return err
		}
		c, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "pg"), Fast: true, Logger: logger})
		if err != nil {
			return fmt.Errorf("start private postgres: %w", err)
		}
		defer func() {
			if err := c.Stop(); err != nil {
				logger.Error("stop private postgres", "err", err)
			}
			os.RemoveAll(c.Dir())
		}()
		serverURL = c.URL("postgres")
		opts.Keep = false // the private cluster goes with the run
	}
	rep, err := torture.RunOnServer(ctx, serverURL, opts)
	if err != nil {
		return err
	}
	rep.Write(os.Stdout)
	if f := rep.Failures(); len(f) > 0 {
		return fmt.Errorf("torture failed: %s", f[0])
	}
	return nil
}
