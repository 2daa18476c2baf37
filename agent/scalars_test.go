package agent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/core"
)

// A joined node's daemon restarted with --vcpu 4 --memory-mb 4096 (after
// joining with 32 vCPUs and 64 GiB) reports them, and the node's record,
// which the placer books against, takes them; --disk-gb was not given and
// is not reported, so the node keeps its disk. Without a flag given the
// daemon reports none: its defaults never override the record.
func TestRestartedDaemonsConfiguredScalarsReachTheNode(t *testing.T) {
	hs := newHarness(t)
	_, url := hs.gateway("gw1")
	dir := t.TempDir()
	stop := hs.daemon("n1", dir, url) // joins with 32 vCPU, 65536 MB, 500 GB
	hs.eventually("n1", core.NodeConnected)
	stop()

	defaults, err := agent.ParseFlags([]string{"--node", "n1"})
	require.NoError(t, err)
	require.Nil(t, defaults.Scalars, "defaults are not reported")
	flags, err := agent.ParseFlags([]string{"--node", "n1", "--vcpu", "4", "--memory-mb=4096"})
	require.NoError(t, err)
	require.NotNil(t, flags.Scalars)
	require.Nil(t, flags.Scalars.DiskGB, "a flag not given is not reported")

	hs.daemonWith("n1", dir, func(c *agent.Config) { c.Scalars = flags.Scalars }, url)
	allocatable := func() map[string]int64 {
		rows, err := hs.d.Q.NodeResourceListByNode(hs.ctx, "n1")
		require.NoError(t, err)
		out := map[string]int64{}
		for _, r := range rows {
			out[r.Resource] = r.Allocatable
		}
		return out
	}
	require.Eventually(t, func() bool { return allocatable()["vcpu"] == 4 }, 10*time.Second, 5*time.Millisecond,
		"the node keeps the vCPUs of its first join")
	require.Equal(t, map[string]int64{"vcpu": 4, "memory": 4096, "disk": 500}, allocatable())

	_, err = agent.ParseFlags([]string{"--node", "n1", "--vcpu", "-1"})
	require.Error(t, err, "a negative scalar is refused at start")
}
