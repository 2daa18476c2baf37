package agent_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/testenv"
)

// The daemon of a node an operator retires is told so by the gateway, and
// says once that it must be stopped; it keeps trying, less and less often,
// without repeating it or asking for a join token its node cannot have.
func TestRetiredNodesDaemonSaysSoOnce(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	gw, _ := hs.gateway("gw1")
	var dials atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dials.Add(1)
		gw.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	logs := &testenv.LogBuffer{}
	hs.daemonWith("n1", t.TempDir(), func(c *agent.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}, "ws://"+strings.TrimPrefix(srv.URL, "http://"))
	hs.eventually("n1", core.NodeConnected)
	require.Eventually(t, func() bool { _, ok := gw.Sessions()["n1"]; return ok }, 10*time.Second, 5*time.Millisecond)

	_, err := hs.s.RetireNode(hs.ctx, operator, commands.RetireNode{NodeID: "n1"})
	require.NoError(t, err)
	require.NoError(t, gw.Flush(hs.ctx)) // the gateway drops the retired node's session
	after := dials.Load()
	// Refused attempts wait 10 ms, 20 ms, 40 ms, …: six of them within a
	// second or so.
	require.Eventually(t, func() bool { return dials.Load() >= after+6 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 1, strings.Count(logs.String(), "this node is retired"), "logs:\n%s", logs.String())
	require.NotContains(t, logs.String(), "join-token-file", "a retired node is not asked for a join token")
}
