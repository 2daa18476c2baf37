// Package gateway is the control plane's end of node daemons'
// sessions. It accepts a daemon's WebSocket (authenticated by its node
// credential), speaks the wire protocol (package wire), keeps the open
// sessions in memory, reports their liveness as ages, sends node jobs and
// hands the daemons' reports on.
//
// It writes no state and appends no event: every state transition (join,
// session open and close, liveness, node job results, instances) is a
// command in package commands, which the gateway calls. PostgreSQL is the
// truth; the gateway's sessions are a cache of node_sessions, whose session
// epoch fences every routing and liveness write, so a gateway that lost a
// session to a newer one changes nothing. Node jobs are marked sent and
// committed before they are written to the daemon, stamped with that epoch,
// which the daemon checks: nothing is written to a daemon inside a
// database transaction.
package gateway

// GatewayLeaseName is the lease a gateway holds while it serves sessions.
func GatewayLeaseName(gatewayID string) string { return "gateway:" + gatewayID }
