// Command withpg runs a command with DATABASE_URL pointing at a PostgreSQL
// server, so that a whole test run can share one server:
//
//	go run ./devtools/withpg -- go test -race ./...
//
// If DATABASE_URL is already set, the command simply replaces withpg.
// Otherwise withpg starts a private cluster tuned for tests (see
// internal/pg/cluster) in $COMPUTE_PG_DIR, or ./.compute/testpg, sets
// DATABASE_URL to its "postgres" database for the command, and stops the
// server when the command exits. withpg exits with the command's exit code.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/bettercompute/compute/internal/pg/cluster"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: withpg [--] command [args...]")
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("prog", "withpg")
	// Before starting a server for nothing.
	path, err := exec.LookPath(args[0])
	if err != nil {
		log.Error("command not found", "err", err)
		return 127
	}

	if os.Getenv("DATABASE_URL") != "" {
		// Nothing to manage: become the command, so that it gets signals
		// and its exit status reaches our caller untouched.
		err := syscall.Exec(path, args, os.Environ())
		log.Error("exec", "command", path, "err", err)
		return 126
	}

	dir := os.Getenv("COMPUTE_PG_DIR")
	if dir == "" {
		dir = "./.compute/testpg"
	}
	// Ctrl-C while the server starts: Start stops what it started.
	startCtx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cluster, err := cluster.Start(startCtx, cluster.Options{Dir: dir, Fast: true, Logger: log})
	cancel()
	if err != nil {
		log.Error("start postgres", "err", err)
		return 1
	}
	code := runCommand(path, args, cluster.URL("postgres"), log)
	if err := cluster.Stop(); err != nil {
		log.Error("stop postgres", "err", err)
	}
	return code
}

// runCommand runs args with DATABASE_URL set and returns its exit code. It
// forwards SIGINT and SIGTERM to the command and otherwise ignores them, so
// that withpg lives on to stop the server after the command is gone.
func runCommand(path string, args []string, databaseURL string, log *slog.Logger) int {
	cmd := exec.Command(path, args[1:]...)
	cmd.Args = args
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "DATABASE_URL="+databaseURL)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	if err := cmd.Start(); err != nil {
		log.Error("start command", "err", err)
		return 127
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case sig := <-sigs:
				_ = cmd.Process.Signal(sig)
			case <-done:
				return
			}
		}
	}()

	err := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()) // as a shell reports it
		}
		return exit.ExitCode()
	default:
		log.Error("run command", "err", err)
		return 1
	}
}
