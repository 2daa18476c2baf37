package gateway_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/metrics"
	"github.com/bettercompute/compute/wire"
)

// A daemon's session shows in the gateway's metrics: the sessions it holds
// now, and a counter of the sessions it opened. Before, /metrics had only
// compute_nodes by liveness state, read every 5 s: a node whose session
// dropped and came back between two scrapes (the demo's three did at a
// database restart) left no trace, and a node flapping all day looked
// connected.
func TestGatewaySessionsAreCounted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	reg := prometheus.NewRegistry()
	g := &gateway.Gateway{ID: "gw1", Owner: "gw1-process", Commands: f.s}
	g.Metrics = metrics.NewGateway(reg, g.SessionCount)
	require.NoError(t, g.Renew(f.ctx))
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	url := "ws://" + strings.TrimPrefix(srv.URL, "http://") + wire.Path

	gauge := func() float64 {
		fams, err := reg.Gather()
		require.NoError(t, err)
		for _, fam := range fams {
			if fam.GetName() == metrics.NameGatewaySessions {
				return fam.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return -1
	}
	opened := func() float64 {
		fams, err := reg.Gather()
		require.NoError(t, err)
		for _, fam := range fams {
			if fam.GetName() == metrics.NameGatewaySessionsOpened {
				return fam.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return -1
	}
	require.Zero(t, gauge())
	require.Zero(t, opened(), "the counter exists at 0 before the first session")

	ws, _ := f.connect(url, cred.Token)
	require.Equal(t, 1.0, gauge())
	require.Equal(t, 1.0, opened())

	require.NoError(t, ws.CloseNow())
	require.Eventually(t, func() bool { return gauge() == 0 }, 10*time.Second, 10*time.Millisecond,
		"the session ends when its daemon goes away")
	f.connect(url, cred.Token)
	require.Equal(t, 1.0, gauge())
	require.Equal(t, 2.0, opened(), "the second session of the node counts too")
}
