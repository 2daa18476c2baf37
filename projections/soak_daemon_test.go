package projections_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/internal/lease"
)

// soakDaemon is a node's daemon at the commands level: a session opened
// through the gateway gw1.
type soakDaemon struct {
	node  string
	epoch int64
}

// gatewayLease takes or renews the lease of gateway gw1, which the
// daemons' sessions are fenced by.
func (s *soak) gatewayLease(t *testing.T) lease.Lease {
	t.Helper()
	gw, err := lease.Acquire(s.ctx, s.d.Q, "gateway:gw1", "gw1-process", lease.GatewayTTL)
	require.NoError(t, err)
	return gw
}

// runDaemons has each daemon take its node jobs and report them
// succeeded, with the generation they bring, until none is left to send.
func (s *soak) runDaemons(t *testing.T) {
	t.Helper()
	gw := s.gatewayLease(t)
	for _, d := range s.daemons {
		for range 20 {
			rep, err := s.h.NodeSessions().DispatchNodeJobs(s.ctx, gw, d.node, d.epoch)
			require.NoError(t, err, d.node)
			if len(rep.ToSend) == 0 {
				break
			}
			for _, j := range rep.ToSend {
				var generation *int64
				require.NoError(t, s.d.Pool.QueryRow(s.ctx, "SELECT generation FROM node_commands WHERE id = $1",
					j.ID).Scan(&generation))
				var observed int64
				if generation != nil {
					observed = *generation
				}
				require.NoError(t, s.h.NodeSessions().RecordNodeJobResult(s.ctx, commands.RecordNodeJobResult{
					NodeID: d.node, Epoch: d.epoch, JobID: j.ID, State: "succeeded", ObservedGeneration: observed}), d.node)
				s.counts["node jobs"]++
			}
		}
	}
}
