package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/metrics"
	"github.com/bettercompute/compute/internal/tracing"
	"github.com/bettercompute/compute/wire"
)

// Gateway is the gateway role: it holds daemon sessions over WebSockets
// under its lease "gateway:<ID>" (lease.GatewayTTL, renewed every
// lease.RenewEvery) and flushes their liveness as ages.
//
// Its sessions are a cache. The truth is node_sessions: a session the
// database no longer has at this gateway and epoch (superseded by a
// reconnect elsewhere, or ended when this gateway's lease lapsed) is dropped
// at the next flush, and a gateway that loses its lease drops them all;
// daemons then reconnect and supersede by epoch.
type Gateway struct {
	// ID names the gateway; its lease is GatewayLeaseName(ID).
	ID string
	// Owner is unique per process, so a restarted gateway takes the lease
	// over at a new epoch instead of inheriting its predecessor's sessions.
	Owner string
	// Commands is where the gateway writes: session open and close,
	// liveness ages, node job dispatch and results.
	Commands *commands.Handlers
	Logger   *slog.Logger
	// Now is the gateway's local clock. It only ever measures ages (how
	// long since a daemon was heard from); no time it reads reaches the
	// database, so a wrong clock cannot fake liveness. Default time.Now.
	Now func() time.Time
	// OnMessage, when set, sees every message a daemon sends after its
	// hello (journal replays, assignment results).
	OnMessage func(nodeID string, epoch int64, m wire.Message)
	// Tick makes the tickers Run's loops wait on; nil means a
	// time.Ticker. Tests hand in ticks they send after moving the
	// simulated clock.
	Tick func(every time.Duration) (ticks <-chan time.Time, stop func())
	// AuthFailureRate and AuthFailureBurst limit failed node-credential
	// lookups per client address, as the API limits failed bearer tokens:
	// Burst failures in a row, then one per 1/Rate seconds; past that the
	// address gets 429 without a lookup. Zero means
	// authn.DefaultFailureRate and authn.DefaultFailureBurst.
	AuthFailureRate  float64
	AuthFailureBurst int
	// ClientAddresses says which address a failed lookup counts against
	// (see httpapi.Deps.ClientAddresses); the zero value trusts no proxy.
	ClientAddresses authn.ClientAddresses
	// Metrics counts the sessions opened (compute_gateway_sessions_opened_total);
	// nil counts nothing. Build it with SessionCount, the gauge of those
	// held.
	Metrics *metrics.Gateway

	// beforeWrite, when set (tests only, see export_test.go), runs before
	// every write to a daemon; an error from it fails the write unmade.
	beforeWrite func(ctx context.Context, nodeID string, m wire.Message) error
	// afterOpen, when set (tests only), runs when a session's open has
	// committed, before the gateway holds the session.
	afterOpen func(nodeID string, epoch int64)
	// readsThrottled, when set (tests only), runs when a session's next
	// read waits for its bound (awaitRead); readLimit, when set, is that
	// bound instead of messageRate and messageBurst.
	readsThrottled func(nodeID string)
	readLimit      *rate.Limiter

	mu       sync.Mutex
	fails    *authn.FailureLimiter // made on first use from AuthFailureRate and AuthFailureBurst
	lease    lease.Lease
	held     bool
	sessions map[string]*gatewaySession
	// opening holds the nodes whose session open is in flight here (see
	// startOpen).
	opening map[string]bool
	// nodeLimits holds each node's limits here, across its sessions.
	nodeLimits map[string]*nodeLimits
}

func (g *Gateway) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// failures is the gateway's limiter of failed credential lookups.
func (g *Gateway) failures() *authn.FailureLimiter {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fails == nil {
		g.fails = authn.NewFailureLimiter(g.AuthFailureRate, g.AuthFailureBurst)
	}
	return g.fails
}

func (g *Gateway) logger() *slog.Logger {
	if g.Logger != nil {
		return g.Logger
	}
	return slog.Default()
}

// Renew takes or renews the gateway's lease. When the lease was lost, or
// came back at another epoch, every cached session is dropped: the database
// already counts them as ended with the lease.
func (g *Gateway) Renew(ctx context.Context) error {
	l, err := lease.Acquire(ctx, db.New(g.Commands.Pool), GatewayLeaseName(g.ID), g.Owner, lease.GatewayTTL)
	if err != nil {
		g.lostLease()
		return fmt.Errorf("gateway %s: %w", g.ID, err)
	}
	g.mu.Lock()
	stale := g.held && g.lease.Epoch != l.Epoch
	g.lease, g.held = l, true
	g.mu.Unlock()
	if stale {
		g.dropAll(websocket.StatusTryAgainLater, "gateway lease epoch changed")
	}
	return nil
}

// Flush reports every session's age to the database, fenced by the lease.
// Sessions silent for wire.SilenceLimit are closed as of when they were last
// heard, and sessions whose daemon has not reported what it holds within
// inventoryDeadline are closed now; sessions the database did not touch
// are zombies and are dropped.
func (g *Gateway) Flush(ctx context.Context) error {
	g.mu.Lock()
	l, held := g.lease, g.held
	all := make([]*gatewaySession, 0, len(g.sessions))
	for _, s := range g.sessions {
		all = append(all, s)
	}
	g.mu.Unlock()
	if !held {
		return nil
	}
	now := g.now()
	var seen []commands.SeenAge
	for _, s := range all {
		age := now.Sub(s.heard())
		if age > wire.SilenceLimit {
			g.end(ctx, s, age, "silent for "+age.Round(time.Second).String())
			continue
		}
		if !s.hasReported() && now.Sub(s.opened) > inventoryDeadline {
			g.end(ctx, s, 0, "no inventory within "+inventoryDeadline.String())
			continue
		}
		seen = append(seen, commands.SeenAge{NodeID: s.nodeID, Epoch: s.epoch, Age: age})
	}
	touched, err := g.Commands.NodeSessions().RecordNodeLiveness(ctx, l, g.ID, seen)
	if errors.Is(err, lease.ErrFenced) {
		g.lostLease()
		return fmt.Errorf("gateway %s: %w", g.ID, err)
	}
	if err != nil {
		return err
	}
	ok := make(map[string]bool, len(touched))
	for _, id := range touched {
		ok[id] = true
	}
	for _, x := range seen {
		if !ok[x.NodeID] {
			g.drop(x.NodeID, x.Epoch, websocket.StatusPolicyViolation, "session superseded")
		}
	}
	return nil
}

// Run holds the gateway's lease until ctx ends, on loops that never wait
// for one another: the lease is renewed every lease.RenewEvery (and, while
// another process holds it, tried every takeOverEvery: takeOver),
// liveness is flushed as often, and node jobs are dispatched every
// DispatchEvery (Gateway.DispatchPending). A daemon that reads slowly can
// hold up only the dispatch loop, and only its own sends (each write has
// the deadline sendTimeout); it can never cost the gateway its lease,
// which would end every session here.
//
// On the way out (ctx ended: the process stops) Run closes every
// connection and releases the lease, so that the process that takes over
// the gateway's id (a restart) serves the reconnecting daemons at once
// instead of after the lease's TTL. The sessions' nodes become
// disconnected as of their last sighting, with the gateway grace, as when
// a lease lapses; a gateway that dies without releasing is found by the
// lapse.
func (g *Gateway) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { g.every(ctx, lease.RenewEvery, "gateway lease", g.Renew) })
	wg.Go(func() { g.every(ctx, takeOverEvery, "gateway lease take-over", g.takeOver) })
	wg.Go(func() { g.every(ctx, lease.RenewEvery, "gateway liveness flush", g.Flush) })
	wg.Go(func() { g.every(ctx, DispatchEvery, "gateway node job dispatch", g.DispatchPending) })
	wg.Wait()
	g.Abandon()
	g.release(ctx)
}

// takeOverEvery is how often a gateway that does not hold its lease tries
// to take it, between renewals.
const takeOverEvery = time.Second

// takeOver takes the lease when the gateway does not hold it: a process
// started again after a crash finds its predecessor's lease live, answers
// its daemons 503 until it lapses, and takes it within takeOverEvery of
// the lapse rather than at its next renewal, up to lease.RenewEvery later
// (the daemons dial every second meanwhile: agent/reconnect.go). A
// failure here changes nothing and is not reported: the renewal loop
// reports its own, and only it gives a held lease up.
func (g *Gateway) takeOver(ctx context.Context) error {
	if g.holdsLease() {
		return nil
	}
	l, err := lease.Acquire(ctx, db.New(g.Commands.Pool), GatewayLeaseName(g.ID), g.Owner, lease.GatewayTTL)
	if err != nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.held {
		g.lease, g.held = l, true
	}
	return nil
}

// release gives the lease up (fenced by its owner and epoch: one taken
// over meanwhile is not touched), with a few seconds of its own since ctx
// has ended.
func (g *Gateway) release(ctx context.Context) {
	g.mu.Lock()
	l, had := g.lease, g.lease.Name != ""
	g.mu.Unlock()
	if !had {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := l.Release(rctx, db.New(g.Commands.Pool)); err != nil {
		g.logger().Warn("release gateway lease", "gateway", g.ID, "err", err)
	}
}

// every runs fn now and then at each tick until ctx ends. A run that
// overruns its period skips the ticks it missed, as a time.Ticker does.
// A run of failures (a database outage fails every one) is logged under
// what once as it starts, once a minute and once as fn succeeds again
// (tracing.FailureStreak), not at every tick.
func (g *Gateway) every(ctx context.Context, period time.Duration, what string, fn func(context.Context) error) {
	tick, stop := g.ticker(period)
	defer stop()
	failures := tracing.NewFailureStreak(g.logger().With("gateway", g.ID), what, slog.LevelWarn)
	for {
		switch err := fn(ctx); {
		case err == nil:
			failures.Succeeded()
		case ctx.Err() == nil:
			failures.Failed(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

func (g *Gateway) ticker(every time.Duration) (<-chan time.Time, func()) {
	if g.Tick != nil {
		return g.Tick(every)
	}
	t := time.NewTicker(every)
	return t.C, t.Stop
}

// Sessions lists the nodes with a session here and their epochs.
func (g *Gateway) Sessions() map[string]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int64, len(g.sessions))
	for id, s := range g.sessions {
		out[id] = s.epoch
	}
	return out
}

// Send writes m to the node's daemon on its current session here, stamped
// with the session's epoch (the daemon refuses any other).
func (g *Gateway) Send(ctx context.Context, nodeID string, m wire.Message) error {
	g.mu.Lock()
	s := g.sessions[nodeID]
	g.mu.Unlock()
	if s == nil {
		return fmt.Errorf("gateway %s: no session for node %s", g.ID, nodeID)
	}
	m.SessionEpoch = s.epoch
	return g.write(ctx, s, m)
}

// Abandon stops serving the way a crash does: every connection is dropped
// and nothing is recorded, so the sessions end only when the lease lapses
// (the nodes then get the gateway-lost grace). Run does the same on exit.
func (g *Gateway) Abandon() {
	g.mu.Lock()
	g.held = false
	g.mu.Unlock()
	g.dropAll(websocket.StatusGoingAway, "gateway stopping")
}

func (g *Gateway) lostLease() {
	g.mu.Lock()
	was := g.held
	g.held = false
	g.mu.Unlock()
	if was {
		g.dropAll(websocket.StatusTryAgainLater, "gateway lost its lease")
	}
}

// dropAll closes every connection without writing to the database.
func (g *Gateway) dropAll(code websocket.StatusCode, why string) {
	g.mu.Lock()
	all := g.sessions
	g.sessions = map[string]*gatewaySession{}
	g.mu.Unlock()
	for _, s := range all {
		s.close(code, why)
	}
}

// SessionCount is how many daemon sessions the gateway holds now
// (compute_gateway_sessions).
func (g *Gateway) SessionCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.sessions)
}

// drop closes one connection if it is still the node's session at epoch,
// without writing to the database. It reports whether it was.
func (g *Gateway) drop(nodeID string, epoch int64, code websocket.StatusCode, why string) bool {
	g.mu.Lock()
	s := g.sessions[nodeID]
	if s == nil || s.epoch != epoch {
		g.mu.Unlock()
		return false
	}
	delete(g.sessions, nodeID)
	g.mu.Unlock()
	s.close(code, why)
	return true
}

// end closes a session whose daemon went away and records the close, as of
// ago before now, in the database.
func (g *Gateway) end(ctx context.Context, s *gatewaySession, ago time.Duration, why string) {
	if !g.drop(s.nodeID, s.epoch, websocket.StatusGoingAway, why) {
		return // already superseded or dropped: not ours to record
	}
	if err := g.Commands.NodeSessions().CloseNodeSession(ctx, s.nodeID, s.epoch, ago); err != nil && !errors.Is(err, commands.ErrSessionSuperseded) {
		g.logger().Warn("close session", "gateway", g.ID, "node", s.nodeID, "epoch", s.epoch, "err", err)
	}
}
