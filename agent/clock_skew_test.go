package agent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/core"
)

// A node whose clock is off from the control plane's judges its
// assignments' windows by the control plane's clock, which the gateway's
// welcome carries. Ten minutes behind, the daemon refused every workload
// of a reservation that had begun ("it is not active yet on this node")
// for its first nine minutes; ten minutes ahead, it refused those of a
// reservation with less than ten minutes left ("the assignment … ended"),
// and its watchdog stopped every workload ten minutes before its end.
func TestSkewedNodeClockJudgesWindowsByTheControlPlanes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		skew   time.Duration // the node's clock minus the control plane's
		length time.Duration // of the reservation, from now
	}{
		{"behind", -10 * time.Minute, time.Hour},
		{"ahead", 10 * time.Minute, 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			g, url := hs.gateway("gw1")
			router := hs.router(g)
			controlPlane := hs.clock()
			hs.daemonWith("n1", t.TempDir(), func(c *agent.Config) {
				c.Now = func() time.Time { return controlPlane().Add(tc.skew) }
			}, url)
			hs.eventually("n1", core.NodeConnected)
			rsv := hs.bookFor("n1", tc.length)
			id, _ := hs.startInstance(router, "n1", rsv, "i1", "exec sleep 600")
			require.Eventually(t, func() bool {
				st := hs.instance(id).State
				return st != core.ProvisionRequested && st != core.ProvisionProvisioning
			}, 10*time.Second, 5*time.Millisecond)
			got := hs.instance(id)
			require.Equal(t, core.ProvisionRunning, got.State, got.Reason)
		})
	}
}
