package main

import (
	"context"

	"github.com/bettercompute/compute/agent"
)

// agentCmd runs the node daemon. It needs no database: it talks to the API
// to join and to a gateway for its session.
func agentCmd(ctx context.Context, args []string) error {
	cfg, err := agent.ParseFlags(args)
	if err != nil {
		return badFlags{err}
	}
	cfg.Logger = agentLogger() // JSON lines like the server's
	agent.ProtectFromOOMKiller(cfg.Logger)
	return agent.Run(ctx, cfg)
}
