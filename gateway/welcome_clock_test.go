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

// The welcome carries the control plane's clock (compute_now(), here the
// simulated one, years from the gateway's own) when the session opened:
// the daemon judges its assignments' windows, which are in that time, by
// it rather than by the node's clock.
func TestWelcomeCarriesTheControlPlanesClock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	_, url := f.liveGateway("gw1")
	want := f.d.Now(t)
	_, welcome := f.connect(url, cred.Token)
	require.NotNil(t, welcome.Now)
	require.WithinDuration(t, want, *welcome.Now, time.Second)
	require.True(t, welcome.Now.Equal(*f.session("n1").OpenedAt), "the session's open, %s", welcome.Now)
	// And that this gateway acknowledges reports (report_ack_test.go).
	require.True(t, welcome.ReportAcks)
}

// A node whose clock is off from the control plane's by more than
// wire.ClockSkewWarn is counted in
// compute_gateway_sessions_clock_skewed_total (and logged) at its
// session's open; one within it, or a hello without a clock, is not.
// Before, nothing of the node's time reached the control plane.
func TestNodeClockOffIsCounted(t *testing.T) {
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
	skewed := func() float64 {
		fams, err := reg.Gather()
		require.NoError(t, err)
		for _, fam := range fams {
			if fam.GetName() == metrics.NameGatewayClockSkewed {
				return fam.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return -1
	}
	hello := func(off time.Duration) wire.Message {
		now := f.d.Now(t).Add(off)
		return wire.Message{Type: wire.TypeHello, JournalID: "j1", Now: &now}
	}
	require.Zero(t, skewed())
	ws, _ := f.connectHello(url, cred.Token, hello(0))
	require.Zero(t, skewed(), "a node on time")
	require.NoError(t, ws.CloseNow())
	ws, _ = f.connectHello(url, cred.Token, wire.Message{Type: wire.TypeHello, JournalID: "j1"})
	require.Zero(t, skewed(), "a daemon that sends no clock")
	require.NoError(t, ws.CloseNow())
	ws, _ = f.connectHello(url, cred.Token, hello(-10*time.Minute))
	require.Equal(t, 1.0, skewed(), "a node ten minutes behind")
	require.NoError(t, ws.CloseNow())
	f.connectHello(url, cred.Token, hello(10*time.Minute))
	require.Equal(t, 2.0, skewed(), "a node ten minutes ahead")
}
