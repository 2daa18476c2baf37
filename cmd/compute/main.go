// Command compute is the Better Compute control plane: one binary whose
// subcommands serve the API and workers, apply migrations and administer
// tokens. This package only wires; the logic lives in the packages it calls.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/bettercompute/compute/internal/config"
)

const usage = `usage: compute <command> [flags]

commands:
  serve [--demo]                               run the API and workers (private PostgreSQL when DATABASE_URL is unset)
  agent --node N [--fake-gpus 8xH100-80GB] …   run a node daemon (see docs/concepts/nodes.md)
  migrate                                      apply database migrations and exit
  check                                        check the capacity invariants against the database
  torture [--ops N] [--concurrency C] [--seed S]   attack the capacity core in a scratch database and judge it
  projections rebuild NAME                     replay the log into a fresh read model and swap it in
  tokens create --tenant T --identity I --role R   issue an API token and print it once
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	logger := newLogger(cfg.LogLevel)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	args := os.Args[2:]
	switch os.Args[1] {
	case "serve":
		err = serve(ctx, cfg, logger, args)
	case "migrate":
		err = migrateCmd(ctx, cfg, logger)
	case "projections":
		err = projectionsCmd(ctx, cfg, logger, args)
	case "agent":
		err = agentCmd(ctx, args)
	case "check":
		err = checkCmd(ctx, cfg, logger)
	case "torture":
		err = tortureCmd(ctx, cfg, logger, args)
	case "tokens":
		err = tokensCmd(ctx, cfg, logger, args)
	case "help", "-h", "--help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		logger.Error("compute "+os.Args[1]+" failed", "err", err)
		os.Exit(1)
	}
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
