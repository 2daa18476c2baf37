package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/wire"
)

// A GPU that falls off the bus while the daemon is connected is reported at
// once, and so is its return: the control plane takes it out of placement
// and puts it back without waiting for the daemon's next connect. The
// report is of the machine only (what the daemon holds and runs null), so
// it judges no assignment or instance.
func TestConnectedDaemonReportsAGPUGoneAndBack(t *testing.T) {
	bin, err := filepath.Abs("testdata/bin")
	require.NoError(t, err)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("NVIDIA_SMI_RECORDING", "h100x8")
	const gone = "GPU-a3d70b6e-1c94-52f8-b0e6-7f2a9d4c1e04" // not in the h100x7 recording

	hs := newHarness(t)
	_, url := hs.gateway("gw1")
	hs.daemonWith("n1", t.TempDir(), func(c *agent.Config) {
		c.FakeGPUs = "" // nvidia-smi: the recordings
		c.InventoryEvery = 10 * time.Millisecond
	}, url)
	hs.eventually("n1", core.NodeConnected)
	health := func() string {
		g, err := hs.d.Q.DeviceGet(hs.ctx, gone)
		require.NoError(t, err)
		return g.Health
	}
	require.Eventually(t, func() bool { return len(hs.sent(wire.TypeInventory)) == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, "healthy", health())

	t.Setenv("NVIDIA_SMI_RECORDING", "h100x7")
	require.Eventually(t, func() bool { return health() == "missing" }, 10*time.Second, 5*time.Millisecond)
	t.Setenv("NVIDIA_SMI_RECORDING", "h100x8")
	require.Eventually(t, func() bool { return health() == "healthy" }, 10*time.Second, 5*time.Millisecond)

	// The harness records a message once the gateway has handled it, so
	// the last report may show in the database before it shows here.
	require.Eventually(t, func() bool { return len(hs.sent(wire.TypeInventory)) >= 3 }, 10*time.Second, 5*time.Millisecond)
	inv := hs.sent(wire.TypeInventory)
	require.Len(t, inv, 3, "the connect's inventory, then one report per change")
	for _, m := range inv[1:] {
		require.JSONEq(t, `null`, string(jsonField(t, m.Payload, "assignments")))
		require.JSONEq(t, `null`, string(jsonField(t, m.Payload, "instances")))
	}
	require.JSONEq(t, `[]`, string(jsonField(t, inv[0].Payload, "assignments")), "the connect's inventory says what it holds")
}

// jsonField is the raw value of an object's field.
func jsonField(t *testing.T, obj []byte, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(obj, &m))
	return m[name]
}
