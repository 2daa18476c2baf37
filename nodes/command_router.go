package nodes

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/nodes/wire"
)

// CommandRouter runs KindCommandDispatch in a process that serves the
// gateway role: each gateway registers here, and a dispatch goes through
// the gateway that holds the node's session. The database says which
// gateway that is (node_sessions.gateway_id); the gateway's own session
// epoch then fences the send (Gateway.Dispatch).
//
// Routing is in-process only. When the node's gateway is in another
// process the item is done here: that gateway picks the command up itself
// with Gateway.DispatchPending, which Gateway.Run calls on every lease
// renewal. When the gateway is here but has not registered the session yet
// (the item raced the session open) the item is retried shortly.
type CommandRouter struct {
	Service *Service

	mu       sync.Mutex
	gateways map[string]*Gateway
}

// Register makes g a route for the sessions it holds.
func (r *CommandRouter) Register(g *Gateway) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gateways == nil {
		r.gateways = map[string]*Gateway{}
	}
	r.gateways[g.ID] = g
}

func (r *CommandRouter) gateway(id string) *Gateway {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gateways[id]
}

// HandleDispatch is the work-queue handler of KindCommandDispatch (key: the
// node id). A node without a connected session needs nothing: its next
// session open enqueues the dispatch again.
func (r *CommandRouter) HandleDispatch(ctx context.Context, it workqueue.Item) error {
	sess, err := db.New(r.Service.Pool).NodeSessionGet(ctx, it.Key)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return db.Translate(err, "node session")
	}
	if !sess.Connected || sess.GatewayID == nil {
		return nil
	}
	g := r.gateway(*sess.GatewayID)
	if g == nil {
		return nil // another process's gateway: its own poll sends
	}
	_, err = g.Dispatch(ctx, it.Key)
	if errors.Is(err, ErrSessionSuperseded) {
		return workqueue.Again(dispatchAgain) // not registered at the gateway yet, or superseded meanwhile
	}
	return err
}

// DispatchPending dispatches, through this gateway, the commands of every
// node whose session it holds and that has something to send. It is the
// gateway's own poll (Run calls it on every lease renewal), so commands
// reach daemons whichever process's worker ran the dispatch item, at worst
// one renewal period late. Nodes whose session here was superseded are
// skipped: their new gateway sends.
func (g *Gateway) DispatchPending(ctx context.Context) error {
	g.mu.Lock()
	held := g.held
	g.mu.Unlock()
	if !held {
		return nil
	}
	ids, err := db.New(g.Service.Pool).NodeCommandNodesToDispatch(ctx, g.ID)
	if err != nil {
		return db.Translate(err, "node commands")
	}
	var first error
	for _, id := range ids {
		if _, err := g.Dispatch(ctx, id); err != nil && !errors.Is(err, ErrSessionSuperseded) && first == nil {
			first = err
		}
	}
	return first
}

// commandResult records a daemon's command report. A failure is logged,
// not fatal to the session: the control plane re-sends in-flight commands
// at the daemon's next session and the daemon reports again from its
// journal.
func (g *Gateway) commandResult(ctx context.Context, nodeID string, m wire.Message) {
	if err := g.Service.RecordCommandResult(ctx, nodeID, m); err != nil {
		g.logger().Warn("command result", "gateway", g.ID, "node", nodeID, "command", m.CommandID, "err", err)
	}
}
