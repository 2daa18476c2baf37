package gateway_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/wire"
)

// A gateway that stops (its process shuts down) closes its daemons'
// connections and releases its lease: the process that takes over its id
// (a restart) serves them at once, not a lease TTL later, and the node is
// disconnected as of its last sighting, with the gateway grace.
func TestStoppedGatewayHandsItsLeaseOver(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	first := &gateway.Gateway{ID: "gw1", Owner: "gw1-first", Commands: f.s}
	srv := httptest.NewServer(first)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(f.ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); first.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran })

	held := func(owner string) bool {
		var n int
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM leases WHERE name = $1 AND owner = $2 AND expires_at > compute_now()",
			gateway.GatewayLeaseName("gw1"), owner).Scan(&n))
		return n == 1
	}
	require.Eventually(t, func() bool { return held("gw1-first") }, 10*time.Second, 5*time.Millisecond)
	d, epoch := f.wireDaemon("ws://"+strings.TrimPrefix(srv.URL, "http://")+wire.Path, cred.Token)
	require.Eventually(t, func() bool { return first.Sessions()["n1"] == epoch }, 10*time.Second, 5*time.Millisecond)
	f.requireState("n1", core.NodeConnected)

	cancel()
	<-ran
	for range d.msgs { // the daemon's connection is closed
	}
	require.False(t, held("gw1-first"), "the stopped gateway released its lease")

	// The restarted process takes the gateway's id over without waiting
	// for the old lease to lapse (no simulated time passes).
	second := &gateway.Gateway{ID: "gw1", Owner: "gw1-second", Commands: f.s}
	require.NoError(t, second.Renew(f.ctx))
	require.True(t, held("gw1-second"))

	require.NoError(t, commandstest.SweepLiveness(f.ctx, f.s))
	f.requireState("n1", core.NodeDisconnected)
	s := f.session("n1")
	require.NotNil(t, s.CloseReason)
	require.Equal(t, "gateway-lost", *s.CloseReason)
	require.Equal(t, "gateway-lost", s.GraceReason, "the gateway grace")
}
