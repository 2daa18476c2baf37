package agent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/bettercompute/compute/wire"
)

// containerSandbox is a sandbox in container mode with four fake GPUs, on
// its own node id, workload root and uid table; it skips where containers
// cannot run (not root, no runc).
func containerSandbox(t *testing.T) *sandbox {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("container isolation needs root")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skip("container isolation needs runc (apt-get install runc)")
	}
	root, err := os.MkdirTemp("", "compute-ct-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	node := fmt.Sprintf("ct%d-%s", os.Getpid(), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	cfg := Config{NodeID: node, StateDir: t.TempDir(), WorkloadDir: root, FakeGPUs: "4xH100-80GB",
		UIDTable: filepath.Join(t.TempDir(), "uids.json"), Logger: slog.New(slog.DiscardHandler)}
	gpus, err := inventoryGPUs(context.Background(), node, cfg.FakeGPUs)
	require.NoError(t, err)
	sb, err := openSandbox(context.Background(), cfg, gpus)
	require.NoError(t, err)
	require.NoError(t, sb.check())
	return sb
}

// run runs script as a workload of a and returns its output and exit
// status.
func (s *sandbox) runScript(t *testing.T, a *wire.AssignPayload, script string) (string, int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := s.workload(ctx, a, script, ".")
	require.NoError(t, err)
	out := &tailBuffer{max: maxOutput}
	w.cmd.Stdout, w.cmd.Stderr = out, out
	code, _ := exitStatus(w.cmd.Run(), w.oomKilled())
	return out.String(), code
}

// keeperPID is the host pid of the allocation container's first process.
func (s *sandbox) keeperPID(t *testing.T, domain string) int {
	st, err := s.runc.state(context.Background(), domain)
	require.NoError(t, err)
	require.Equal(t, "running", st.Status)
	return st.PID
}

// A workload holding GPU 0 opens its own GPU and the driver's control
// device (ENXIO: allowed, no driver behind a fake device), and gets EPERM
// on every other GPU even when the node exists in its /dev: the kernel's
// device cgroup decides, not CUDA_VISIBLE_DEVICES.
func TestContainerSeesOnlyItsGPUs(t *testing.T) {
	sb := containerSandbox(t)
	a := &wire.AssignPayload{AllocationID: "alc_gpu0", VCPU: 1, MemoryMB: 256,
		Devices: []wire.AssignedDevice{{ID: sb.devices.gpus[0].UUID, GPU: sb.devices.gpus[0].UUID, Kind: "gpu",
			Visible: sb.devices.gpus[0].UUID}}}
	t.Cleanup(func() { _ = sb.forget(context.Background(), a.AllocationID) })
	out, code := sb.runScript(t, a, "ls /dev")
	require.Zero(t, code, out)
	require.Contains(t, strings.Fields(out), "nvidia0")
	require.Contains(t, strings.Fields(out), "nvidiactl")
	require.NotContains(t, strings.Fields(out), "nvidia3", "only its GPU is in its /dev")
	// Root on the host puts the other GPUs' nodes into the container's
	// /dev, as a workload that found a way to them would have them.
	devDir := fmt.Sprintf("/proc/%d/root/dev", sb.keeperPID(t, a.AllocationID))
	for _, minor := range []uint32{1, 2, 3} {
		require.NoError(t, unix.Mknod(filepath.Join(devDir, fmt.Sprintf("nvidia%d", minor)), unix.S_IFCHR|0o666,
			int(unix.Mkdev(nvidiaMajor, minor))))
	}
	out, _ = sb.runScript(t, a, `unset CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES
for d in nvidia0 nvidiactl nvidia1 nvidia2 nvidia3; do head -c1 /dev/$d >/dev/null 2>err; echo "$d $(sed 's/.*: //' err)"; done`)
	require.Equal(t, "nvidia0 No such device or address\nnvidiactl No such device or address\n"+
		"nvidia1 Operation not permitted\nnvidia2 Operation not permitted\nnvidia3 Operation not permitted\n", out)
}
