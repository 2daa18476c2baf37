package main

import (
	"context"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/cmd/compute/cli"
)

// agentCmd runs the node daemon. It needs no database: it talks to the API
// to join and to a gateway for its session.
func agentCmd(ctx context.Context, args []string) error {
	cfg, err := agent.ParseFlags(args)
	if err != nil {
		return badFlags{err}
	}
	logger, err := agentLogger()
	if err != nil {
		return badFlags{err} // bad input, refused before the daemon runs (exit 2)
	}
	cfg.Logger = logger // JSON lines like the server's; agent.Run adds the node id
	// The lines logged here, before agent.Run and after it returns, name the
	// node like every line of the daemon's: the one that says why it exited
	// (a refused join, say) is the one an operator searches a fleet's logs for.
	log := cfg.Logger.With("node", cfg.NodeID)
	agent.ProtectFromOOMKiller(log)
	if err := agent.Run(ctx, cfg); err != nil {
		log.Error("compute agent failed", "err", err)
		return cli.ErrReported
	}
	return nil
}
