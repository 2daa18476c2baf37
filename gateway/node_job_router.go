package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/wire"
)

// NodeJobRouter runs commands.KindNodeJobDispatch in a process that serves
// the gateway role: each gateway registers here, and a dispatch goes
// through the gateway that holds the node's session. The database says
// which gateway that is (node_sessions.gateway_id); the gateway's own
// session epoch then fences the send (Gateway.Dispatch).
//
// Routing is in-process only. When the node's gateway is in another
// process the item is done here: that gateway picks the job up itself with
// Gateway.DispatchPending, which Gateway.Run calls every DispatchEvery.
// When the gateway is here but has not registered the session yet (the
// item raced the session open) the item is retried shortly.
type NodeJobRouter struct {
	Commands *commands.Handlers

	mu       sync.Mutex
	gateways map[string]*Gateway
}

// Register makes g a route for the sessions it holds.
func (r *NodeJobRouter) Register(g *Gateway) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gateways == nil {
		r.gateways = map[string]*Gateway{}
	}
	r.gateways[g.ID] = g
}

func (r *NodeJobRouter) gateway(id string) *Gateway {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gateways[id]
}

// HandleDispatch is the work-queue handler of commands.KindNodeJobDispatch
// (key: the node id). A node without a connected session needs nothing:
// its next session open enqueues the dispatch again.
func (r *NodeJobRouter) HandleDispatch(ctx context.Context, it workqueue.Item) error {
	sess, err := db.New(r.Commands.Pool).NodeSessionGet(ctx, it.Key)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return pg.Translate(err, "node session")
	}
	if !sess.Connected || sess.GatewayID == nil {
		return nil
	}
	g := r.gateway(*sess.GatewayID)
	if g == nil {
		return nil // another process's gateway: its own poll sends
	}
	_, err = g.Dispatch(ctx, it.Key)
	if errors.Is(err, commands.ErrSessionSuperseded) {
		return workqueue.Again(dispatchAgain) // not registered at the gateway yet, or superseded meanwhile
	}
	return err
}

// DispatchPending dispatches, through this gateway, the jobs of every node
// whose session it holds and that has something to send, a few nodes at a
// time (dispatchParallel). It is the gateway's own poll (Run calls it every
// DispatchEvery), so jobs reach daemons whichever process's worker ran the
// dispatch item, at worst one period late. Nodes whose session here was
// superseded are skipped: their new gateway sends.
func (g *Gateway) DispatchPending(ctx context.Context) error {
	g.mu.Lock()
	held := g.held
	g.mu.Unlock()
	if !held {
		return nil
	}
	ids, err := db.New(g.Commands.Pool).NodeCommandNodesToDispatch(ctx, g.ID)
	if err != nil {
		return pg.Translate(err, "node commands")
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, dispatchParallel)
	)
	for _, id := range ids {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			_, err := g.Dispatch(ctx, id)
			if err != nil && !errors.Is(err, commands.ErrSessionSuperseded) {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// nodeJobResult hands a daemon's report about a node job to
// commands.RecordNodeJobResult. A failure is logged, not fatal to the
// session: the control plane re-sends in-flight jobs at the daemon's next
// session and the daemon reports again from its journal.
func (g *Gateway) nodeJobResult(ctx context.Context, nodeID string, epoch int64, m wire.Message) {
	err := g.Commands.NodeSessions().RecordNodeJobResult(ctx, commands.RecordNodeJobResult{NodeID: nodeID, Epoch: epoch,
		JobID: m.CommandID, State: m.State, ExitCode: m.ExitCode, Output: m.Output, Reason: m.Reason,
		ObservedGeneration: m.ObservedGeneration})
	if err != nil {
		g.warnDaemon(nodeID, "node job result", "gateway", g.ID, "node", nodeID, "command", core.Clip(m.CommandID, 64),
			"err", err)
	}
}

// instanceStopped hands a daemon's wire.TypeInstanceStopped (an instance it
// stopped on its own: its allocation was unassigned, or it outlived its
// assignment; or one whose process exited, with its exit code) to
// commands.RecordInstanceStopped, and acknowledges it (reportAck) once it
// is recorded or refused for good. One that is not acknowledged (the
// database failed, the session was superseded) the daemon sends again, on
// the same session after a while (agent/report_resend.go) and on its next
// session before its inventory, which would otherwise no longer list the
// instance and end it lost.
func (g *Gateway) instanceStopped(ctx context.Context, s *gatewaySession, m wire.Message) {
	nodeID, epoch := s.nodeID, s.epoch
	var p wire.InstanceStopped
	if err := json.Unmarshal(m.Payload, &p); err != nil || p.InstanceID == "" {
		g.warnDaemon(nodeID, "instance stopped: malformed payload", "gateway", g.ID, "node", nodeID, "err", err)
		g.reportAck(ctx, s, m) // sent again, it would be as malformed
		return
	}
	alloc := p.AllocationID
	if alloc == "" {
		alloc = m.AllocationID
	}
	_, err := g.Commands.NodeSessions().RecordInstanceStopped(ctx, commands.RecordInstanceStopped{NodeID: nodeID, Epoch: epoch,
		InstanceID: p.InstanceID, AllocationID: alloc, Reason: p.Reason, Exited: p.Exited, ExitCode: p.ExitCode})
	if err != nil && !errors.Is(err, commands.ErrSessionSuperseded) {
		g.warnDaemon(nodeID, "instance stopped", "gateway", g.ID, "node", nodeID, "instance", core.Clip(p.InstanceID, 64),
			"err", err)
	}
	if err == nil || refusedForGood(err) {
		g.reportAck(ctx, s, m)
	}
}

// refusedForGood says a daemon's report failed for what it says (it names
// no instance of its node, or one its text cannot be stored for), not for
// the moment it came in: sent again, it would fail again.
func refusedForGood(err error) bool {
	if errors.Is(err, commands.ErrSessionSuperseded) {
		return false
	}
	switch core.CodeOf(err) {
	case core.CodeNotFound, core.CodeInvalidArgument, core.CodePermissionDenied:
		return true
	}
	return false
}

// maxReportID bounds the report id the gateway echoes: the daemon's are 26
// characters, and the gateway does not write back megabytes a daemon sent.
const maxReportID = 64

// reportAck tells the daemon its report m is done with (wire.TypeReportAck),
// when it named it: a daemon of a release before report ids sends none,
// and expects no answer. A failed write is the session's end; the daemon
// sends the report again on its next one.
func (g *Gateway) reportAck(ctx context.Context, s *gatewaySession, m wire.Message) {
	if m.ReportID == "" || len(m.ReportID) > maxReportID {
		return
	}
	if err := g.write(ctx, s, wire.Message{Type: wire.TypeReportAck, ReportID: m.ReportID}); err != nil {
		g.logger().Info("report ack", "gateway", g.ID, "node", s.nodeID, "epoch", s.epoch, "err", err)
	}
}
