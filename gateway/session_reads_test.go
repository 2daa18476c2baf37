package gateway_test

import (
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/wire"
)

// A daemon that sends faster than a daemon does is read at the session's
// bound: past its burst the gateway waits before the next read, and the
// daemon's writes wait on flow control. One connection's flood of
// heartbeats used to cost the gateway a CPU core, taken from the API and
// the other sessions. (The bound here is 5 messages, never refilled.)
func TestASessionsMessagesAreReadWithinABound(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	var handled atomic.Int32
	g := &gateway.Gateway{ID: "gw1", Owner: "gw1-process", Commands: f.s, OnMessage: func(_ string, _ int64, m wire.Message) {
		handled.Add(1)
	}}
	throttled := make(chan int32, 1)
	gateway.SetReadLimit(g, rate.NewLimiter(rate.Every(time.Hour), 5), func(string) {
		select {
		case throttled <- handled.Load():
		default:
		}
	})
	require.NoError(t, g.Renew(f.ctx))
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	d, _, _ := f.wireDaemonUnreported("ws://"+strings.TrimPrefix(srv.URL, "http://")+wire.Path, cred.Token)
	for range 8 {
		d.send(wire.Message{Type: "bogus"})
	}
	select {
	case n := <-throttled:
		require.Equal(t, int32(5), n, "the burst read, the sixth waits")
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway read past the bound")
	}
	require.Equal(t, int32(5), handled.Load())
	require.True(t, f.session("n1").Connected, "the session lives on")
}
