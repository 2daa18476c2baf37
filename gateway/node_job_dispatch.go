package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/wire"
)

// Dispatch sends the node's open jobs through this gateway, on the session
// it holds for the node. commands.DispatchNodeJobs marks them sent, fenced
// by this gateway's lease and under the session row's lock at the
// session's epoch, and commits; only then are they written to the daemon,
// each stamped with that epoch, so no transaction waits on a daemon. A
// zombie send (the session was superseded after the commit) carries an
// epoch the daemon no longer accepts. Dispatch fails with
// commands.ErrSessionSuperseded when this gateway's session is no longer
// the node's current one.
//
// A send that fails leaves its job marked sent at an epoch the daemon did
// not get it at, so Dispatch ends the session: the failed write closed the
// connection anyway, and the daemon's next session (a new epoch) gets every
// job in flight again. Delivery stays at least once; the daemon answers a
// repeat from its journal.
func (g *Gateway) Dispatch(ctx context.Context, nodeID string) (commands.DispatchReport, error) {
	g.mu.Lock()
	s, l, held := g.sessions[nodeID], g.lease, g.held
	g.mu.Unlock()
	if !held || s == nil {
		return commands.DispatchReport{}, fmt.Errorf("gateway %s has no session of node %s: %w", g.ID, nodeID,
			commands.ErrSessionSuperseded)
	}
	s.dispatching.Lock()
	defer s.dispatching.Unlock()
	rep, err := g.Commands.NodeSessions().DispatchNodeJobs(ctx, l, nodeID, s.epoch)
	if err != nil {
		return commands.DispatchReport{}, err
	}
	for _, j := range rep.ToSend {
		if err := g.write(ctx, s, nodeJobMessage(j)); err != nil {
			if ctx.Err() == nil { // a gateway that is stopping records nothing: its lease lapses
				g.end(context.WithoutCancel(ctx), s, 0, "node job send failed")
			}
			return rep, fmt.Errorf("gateway %s: send node job %s: %w", g.ID, j.ID, err)
		}
	}
	return rep, nil
}

// nodeJobMessage is the wire form of a node job, stamped with the session
// epoch it was marked sent at. It names the job's allocation, because the
// daemon runs a tenant's job in that allocation's own security domain (its
// user and its devices).
func nodeJobMessage(j commands.NodeJobToSend) wire.Message {
	return wire.Message{Type: wire.TypeCommand, CommandID: j.ID, CommandKind: j.Kind, Payload: j.Payload,
		AllocationID: j.AllocationID, SessionEpoch: j.SessionEpoch}
}

// sendTimeout bounds one write to a daemon. A daemon that stopped reading
// holds up only its own session's sends; a write that times out closes the
// connection, and the session ends.
const sendTimeout = 10 * time.Second

// DispatchEvery is how often a gateway's own poll (DispatchPending) looks
// for jobs to send, whatever the work queue did.
const DispatchEvery = 5 * time.Second

// dispatchParallel is how many nodes DispatchPending sends to at once, so
// that one slow daemon does not hold up the others.
const dispatchParallel = 4

// dispatchAgain is how soon dispatch is retried when the node's gateway is
// in this process but has not registered the session yet.
const dispatchAgain = time.Second
