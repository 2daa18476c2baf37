// Command compute is the Better Compute control plane and its command line:
// one binary whose server-side subcommands serve the API and workers, run
// a node daemon, apply migrations and check the database, and whose client
// subcommands (reservations, nodes, events tail, …) talk to a running
// server over its HTTP API through package client. This package only
// wires: the command line (its tree, the client commands, exit codes) is
// package cli, which main hands the server commands; the logic lives in
// the packages they call. docs/cli.md is the reference of the command
// line, with its exit codes.
package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/bettercompute/compute/cmd/compute/cli"
	"github.com/bettercompute/compute/internal/tracing"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, program(os.Stdin, os.Stdout, os.Stderr, os.Getenv), os.Args[1:])
	stop()
	os.Exit(code)
}

// program is the command line of this binary: package cli's, with the
// server commands and the database path of `tokens create --database`,
// which need the server's packages that cli does not import.
func program(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) cli.Program {
	return cli.Program{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: getenv, Version: version, Commit: commit,
		ServerCommands: serverCmds, CreateTokenInDatabase: createTokenDirect}
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
	// Lines logged with a traced context carry its trace_id and span_id.
	return slog.New(tracing.LogHandler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})))
}
