package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/wire"
)

// Dispatch sends the node's open jobs through this gateway, on the session
// it holds for the node (commands.DispatchNodeJobs marks them, fenced by
// this gateway's lease and the session epoch, and calls back here to write
// each one to the daemon). It fails with commands.ErrSessionSuperseded when
// this gateway's session is no longer the node's current one.
func (g *Gateway) Dispatch(ctx context.Context, nodeID string) (commands.DispatchReport, error) {
	g.mu.Lock()
	s, l, held := g.sessions[nodeID], g.lease, g.held
	g.mu.Unlock()
	if !held || s == nil {
		return commands.DispatchReport{}, fmt.Errorf("gateway %s has no session of node %s: %w", g.ID, nodeID,
			commands.ErrSessionSuperseded)
	}
	return g.Commands.DispatchNodeJobs(ctx, l, nodeID, s.epoch, func(ctx context.Context, j commands.NodeJobToSend) error {
		ctx, cancel := context.WithTimeout(ctx, sendTimeout)
		defer cancel()
		return writeJSON(ctx, s.ws, nodeJobMessage(j))
	})
}

// nodeJobMessage is the wire form of a node job. It names the job's
// allocation, because the daemon runs a tenant's job in that allocation's
// own security domain (its user and its devices).
func nodeJobMessage(j commands.NodeJobToSend) wire.Message {
	return wire.Message{Type: wire.TypeCommand, CommandID: j.ID, CommandKind: j.Kind, Payload: j.Payload,
		AllocationID: j.AllocationID}
}

// sendTimeout bounds one write to a daemon during dispatch. The write
// happens while the session row is locked, and a daemon that stopped
// reading must not keep its own reconnect (which needs that row) waiting.
const sendTimeout = 10 * time.Second

// dispatchAgain is how soon dispatch is retried when the node's gateway is
// in this process but has not registered the session yet.
const dispatchAgain = time.Second
