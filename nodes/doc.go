// Package nodes is the control plane's side of node daemons: credentials
// issued at join, sessions opened through gateways, liveness flushed as ages,
// and the liveness reconciler that applies "disconnected is not dead".
//
// PostgreSQL is the truth. A gateway keeps sessions in memory only as a
// cache; node_sessions holds the session epoch that fences every routing and
// liveness write (AND session_epoch = $epoch), so a gateway that lost a
// session to a newer one changes nothing. Gateways report ages ("last seen
// 3.2 s ago") and the database turns them into compute_now() - age, so a
// gateway's clock never decides whether a node is alive.
//
// Liveness changes a node's condition, never what it owns: no transition in
// this package releases a booking, an allocation or quota. An operator
// decides when a machine is really gone (commands DrainNode, ReleaseNode,
// RetireNode).
package nodes

import (
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Timings from the specification ("Disconnected is not dead").
const (
	// NoSessionAfter is how long a node may be without a session before it
	// becomes unreachable, grace excluded.
	NoSessionAfter = 40 * time.Second
	// GatewayLostGrace is added after the node's gateway lost its lease: the
	// daemon needs time to find another gateway.
	GatewayLostGrace = 120 * time.Second
	// OutageGrace is added after a database or controller outage: no daemon
	// could reconnect while the control plane itself was down.
	OutageGrace = 5 * time.Minute
	// OutageThreshold is the controller heartbeat gap that counts as an
	// outage. Sweeps run every SweepEvery; a gap six times longer means no
	// controller ran or the database was unreachable.
	OutageThreshold = 30 * time.Second
	// SweepEvery is how often the liveness sweep runs.
	SweepEvery = 5 * time.Second
)

// Work-queue kinds of this package. KindLiveness is keyed by node id and
// runs at the node's next threshold; KindLivenessSweep has the single key
// SweepKey and re-enqueues itself every SweepEvery.
const (
	KindLiveness      = "node.liveness"
	KindLivenessSweep = "node.liveness-sweep"
	SweepKey          = "fleet"
)

// Service runs node credentials, sessions and liveness against one
// database.
type Service struct {
	Pool   *pgxpool.Pool
	Logger *slog.Logger
}

func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// GatewayLeaseName is the lease a gateway holds while it serves sessions.
func GatewayLeaseName(gatewayID string) string { return "gateway:" + gatewayID }
