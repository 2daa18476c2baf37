package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

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

// The fake GPUs' device nodes are mode 0666, as the NVIDIA driver makes
// them, whatever the daemon's umask, and so are those an earlier daemon
// left: CUDA opens its devices read-write, and a 0644 node (mknod under
// the usual umask 022) refused an allocation its own GPU (EACCES) before
// the device cgroup could say anything, so tests could not tell an allowed
// GPU from a forbidden one by opening it as a workload would.
func TestFakeGPUDevicesAreWorldWritable(t *testing.T) {
	old := unix.Umask(0o022)
	t.Cleanup(func() { unix.Umask(old) })
	dir := t.TempDir()
	gpus := []wire.InventoryGPU{{UUID: "GPU-fake-0", Model: "A100-80GB", MemoryMB: 81920}}
	for range 2 { // made, then found
		_, err := writeFakeGPUSpec(dir, gpus)
		require.NoError(t, err)
		for _, name := range []string{"nvidia0", "nvidiactl"} {
			fi, err := os.Stat(filepath.Join(dir, "dev", name))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o666), fi.Mode().Perm(), name)
		}
		require.NoError(t, os.Chmod(filepath.Join(dir, "dev", "nvidia0"), 0o644))
	}
}
