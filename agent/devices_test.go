package agent

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

// Every atom kind of a fake GPU has a CDI device: a whole GPU and a slot by
// their GPU, a MIG instance by its atom id (a fake GPU reports no MIG
// UUIDs, and CDI names may not hold the id's '/'), each its own GPU's node.
// Before, a MIG reservation's workloads failed to start with --fake-gpus
// and in the demo: "no CDI device for GPU-…/mig-3".
func TestFakeGPUsHaveADeviceForEveryAtom(t *testing.T) {
	t.Parallel()
	gpus := []wire.InventoryGPU{{UUID: "GPU-fake-0", Model: "A100-80GB", MemoryMB: 81920},
		{UUID: "GPU-fake-1", Model: "A100-80GB", MemoryMB: 81920}}
	cdiDir, err := writeFakeGPUSpec(t.TempDir(), gpus)
	require.NoError(t, err)
	reg, err := openDeviceRegistry([]string{cdiDir}, gpus)
	require.NoError(t, err)
	names, err := reg.names(&wire.AssignPayload{Devices: []wire.AssignedDevice{
		{ID: "GPU-fake-1/mig-3", GPU: "GPU-fake-1", Kind: "mig", Visible: "GPU-fake-1/mig-3"},
		{ID: "GPU-fake-0/s1", GPU: "GPU-fake-0", Kind: "slot", Visible: "GPU-fake-0", Mode: "time-slice"},
	}})
	require.NoError(t, err)
	require.Equal(t, []string{gpuCDIKind + "=GPU-fake-1_mig-3", gpuCDIKind + "=GPU-fake-0"}, names)
	dev := reg.cache.GetDevice(names[0])
	require.NotNil(t, dev)
	require.Equal(t, "/dev/nvidia1", dev.ContainerEdits.DeviceNodes[0].Path, "the instance's GPU's node, no other")
}
