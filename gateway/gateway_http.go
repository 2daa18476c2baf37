package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/wire"
)

// helloTimeout bounds how long a connected daemon may take to say hello.
const helloTimeout = 10 * time.Second

// ServeHTTP accepts one daemon session at wire.Path. The node credential in
// the Authorization header names the node; nothing the daemon says can
// change which node it speaks for.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		http.Error(w, "node credential required", http.StatusUnauthorized)
		return
	}
	// An address that failed too often is answered without a lookup, so
	// guessing node credentials costs the guesser time, not the database
	// a query per guess.
	fails, client, now := g.failures(), g.ClientAddresses.Key(r), g.now()
	if wait, throttled := fails.Throttled(client, now); throttled {
		w.Header().Set("Retry-After", strconv.Itoa(max(int(math.Ceil(wait.Seconds())), 1)))
		http.Error(w, "too many failed authentications from this address: retry later", http.StatusTooManyRequests)
		return
	}
	// A gateway without its lease (one started again after a crash waits
	// for its predecessor's to lapse) refuses before the lookup: its
	// daemons dial every second meanwhile (agent/reconnect.go), and
	// those refusals must cost the database nothing.
	if !g.holdsLease() {
		http.Error(w, "gateway does not hold its lease", http.StatusServiceUnavailable)
		return
	}
	nodeID, credentialID, err := g.Commands.NodeSessions().AuthenticateNodeCredential(r.Context(), token)
	if err != nil {
		status, body := http.StatusServiceUnavailable, wire.RefusedCredential
		if core.CodeOf(err) == core.CodeUnauthenticated {
			status = http.StatusUnauthorized
			fails.Failed(client, now)
			if errors.Is(err, commands.ErrNodeRetired) {
				body = wire.RefusedNodeRetired
			}
		}
		http.Error(w, body, status)
		return
	}
	if !g.limits(nodeID).opens.AllowN(g.now(), 1) {
		g.warnDaemon(nodeID, "session refused: the node connects faster than a daemon does", "gateway", g.ID, "node", nodeID)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "this node opens sessions too often: retry later", http.StatusTooManyRequests)
		return
	}
	g.mu.Lock()
	l, held := g.lease, g.held
	g.mu.Unlock()
	if !held {
		http.Error(w, "gateway does not hold its lease", http.StatusServiceUnavailable)
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept wrote the error response
	}
	ws.SetReadLimit(wire.MaxMessageBytes)
	ctx := r.Context()
	hctx, cancel := context.WithTimeout(ctx, helloTimeout)
	hello, err := readJSON(hctx, ws)
	cancel()
	if err != nil || hello.Type != wire.TypeHello {
		_ = ws.Close(websocket.StatusProtocolError, "expected hello")
		return
	}
	if !g.startOpen(nodeID) {
		g.warnDaemon(nodeID, "session refused: "+refusedOpening, "gateway", g.ID, "node", nodeID)
		_ = ws.Close(websocket.StatusTryAgainLater, refusedOpening)
		return
	}
	sess, err := g.Commands.NodeSessions().OpenNodeSession(ctx, commands.OpenNodeSession{NodeID: nodeID, Gateway: l, GatewayID: g.ID,
		JournalID: hello.JournalID, ObservedGeneration: hello.ObservedGeneration, CredentialID: credentialID})
	if err != nil {
		g.abandonOpen(nodeID)
		g.logger().Warn("open session", "gateway", g.ID, "node", nodeID, "err", err)
		_ = ws.Close(websocket.StatusTryAgainLater, "could not open session")
		return
	}
	if g.afterOpen != nil {
		g.afterOpen(nodeID, sess.Epoch)
	}
	reads := rate.NewLimiter(messageRate, messageBurst)
	if g.readLimit != nil {
		reads = g.readLimit
	}
	s := &gatewaySession{nodeID: nodeID, epoch: sess.Epoch, ws: ws, lastHeard: g.now(), opened: g.now(), reads: reads}
	g.hold(s)
	g.Metrics.SessionOpened()
	// Before the welcome, so that the count has moved when the daemon
	// hears it is in.
	g.checkNodeClock(nodeID, hello, sess.OpenedAt)
	if err := g.write(ctx, s, wire.Message{Type: wire.TypeWelcome, NodeID: nodeID, SessionEpoch: sess.Epoch,
		Now: &sess.OpenedAt, ReportAcks: true}); err != nil {
		g.end(context.WithoutCancel(ctx), s, 0, "welcome failed")
		return
	}
	g.logger().Info("session opened", "gateway", g.ID, "node", nodeID, "epoch", sess.Epoch,
		"journalChanged", sess.JournalChanged)
	for {
		if err := g.awaitRead(ctx, s); err != nil {
			g.end(context.WithoutCancel(ctx), s, 0, "connection ended")
			return
		}
		m, err := readJSON(ctx, ws)
		if err != nil {
			// The daemon went away now. If the gateway itself is going
			// away (lease lost, stopping), drop already removed s and end
			// records nothing: the lease lapsing will.
			g.end(context.WithoutCancel(ctx), s, 0, "connection ended")
			return
		}
		s.touch(g.now())
		switch m.Type {
		case wire.TypeCommandResult:
			g.nodeJobResult(ctx, nodeID, sess.Epoch, m)
		case wire.TypeInstanceStopped:
			g.instanceStopped(ctx, s, m)
		case wire.TypeInventory:
			if !g.limits(nodeID).inventories.AllowN(g.now(), 1) {
				if !s.dropped {
					s.dropped = true
					g.warnDaemon(nodeID, "inventory dropped: the daemon reports faster than a daemon does", "gateway", g.ID,
						"node", nodeID, "epoch", sess.Epoch)
				}
				break
			}
			if err := g.handleInventory(ctx, s, m); err != nil {
				g.end(context.WithoutCancel(ctx), s, 0, err.Error())
				return
			}
		case wire.TypeHeartbeat, wire.TypeReplay:
			// Heard (touch above); a replay is the daemon's journal, which
			// the control plane does not take from it.
		default:
			g.warnDaemon(nodeID, "daemon message ignored: not one a daemon sends on an open session", "gateway", g.ID,
				"node", nodeID, "epoch", sess.Epoch, "type", core.Clip(m.Type, 64))
		}
		if m.Type != wire.TypeHeartbeat && g.OnMessage != nil {
			g.OnMessage(nodeID, sess.Epoch, m)
		}
	}
}

// holdsLease reports whether the gateway holds its lease now.
func (g *Gateway) holdsLease() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

func readJSON(ctx context.Context, ws *websocket.Conn) (wire.Message, error) {
	var m wire.Message
	_, data, err := ws.Read(ctx)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("decode message: %w", err)
	}
	return m, nil
}

// errWriteInTx refuses a write to a daemon made inside a database
// transaction. Nothing external happens inside one: a slow daemon would
// keep it open, and an open transaction holds pg_snapshot_xmin, and with it
// every outbox reader, back. Only tests can see it (pg.TrackTransactions).
var errWriteInTx = errors.New("write to a daemon inside a database transaction")

// write sends m to the daemon of session s, within sendTimeout.
func (g *Gateway) write(ctx context.Context, s *gatewaySession, m wire.Message) error {
	if pg.InsideTx() {
		return fmt.Errorf("write %s to node %s: %w", m.Type, s.nodeID, errWriteInTx)
	}
	if g.beforeWrite != nil {
		if err := g.beforeWrite(ctx, s.nodeID, m); err != nil {
			return fmt.Errorf("write %s to node %s: %w", m.Type, s.nodeID, err)
		}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if err := s.ws.Write(ctx, websocket.MessageText, data); err != nil {
		return fmt.Errorf("write %s to node %s: %w", m.Type, s.nodeID, err)
	}
	return nil
}
