package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/bettercompute/compute/wire"
)

// TestRealGPUContainer is the check on a machine with real NVIDIA GPUs
// (COMPUTE_REAL_GPU=1, as root, runc on PATH): the inventory comes from
// nvidia-smi, and a container holding GPU 0 sees that GPU and no other,
// through the node's CDI spec — COMPUTE_CDI_DIR, as `nvidia-ctk cdi
// generate` writes it, or, where the toolkit is not installed, a spec made
// here the same way from /proc/driver/nvidia. A container holding no GPU
// sees none, and gets EPERM on the GPU's device node even when it is in
// its /dev.
func TestRealGPUContainer(t *testing.T) {
	if os.Getenv("COMPUTE_REAL_GPU") != "1" {
		t.Skip("needs real NVIDIA GPUs: set COMPUTE_REAL_GPU=1")
	}
	ctx := context.Background()
	gpus, err := NvidiaSMIGPUs(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, gpus)
	for _, g := range gpus {
		t.Logf("inventory: %s %s %d MiB MIG=%v %v", g.UUID, g.Model, g.MemoryMB, g.MIGEnabled, g.MIG)
	}
	dir := os.Getenv("COMPUTE_CDI_DIR")
	if dir == "" {
		dir = writeDriverCDISpec(t, gpus)
	}
	root, err := os.MkdirTemp("", "compute-realgpu-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	cfg := Config{NodeID: "realgpu", StateDir: t.TempDir(), WorkloadDir: root, CDISpecDirs: []string{dir},
		UIDTable: filepath.Join(t.TempDir(), "uids.json"), Logger: slog.New(slog.DiscardHandler)}
	sb, err := openSandbox(ctx, cfg, gpus)
	require.NoError(t, err)
	require.NoError(t, sb.check())

	g := gpus[0]
	holder := &wire.AssignPayload{AllocationID: "alc_holder", VCPU: 2, MemoryMB: 4096,
		Devices: []wire.AssignedDevice{{ID: g.UUID, GPU: g.UUID, Kind: "gpu", Visible: g.UUID}}}
	empty := &wire.AssignPayload{AllocationID: "alc_empty", VCPU: 1, MemoryMB: 1024}
	t.Cleanup(func() {
		_ = sb.forget(ctx, holder.AllocationID)
		_ = sb.forget(ctx, empty.AllocationID)
	})
	out, code := sb.runScript(t, holder, `ls /dev | grep nvidia | tr '\n' ' '; echo; nvidia-smi -L`)
	t.Logf("holder (exit %d):\n%s", code, out)
	require.Zero(t, code, out)
	require.Contains(t, out, g.UUID)
	require.Equal(t, 1, strings.Count(out, "GPU-"), "exactly one GPU visible")

	out, code = sb.runScript(t, empty, `ls /dev | grep nvidia | tr '\n' ' '; echo; nvidia-smi -L 2>&1; echo exit $?`)
	t.Logf("empty (exit %d):\n%s", code, out)
	require.NotContains(t, out, g.UUID, "a container without a GPU sees none")
	minor := driverMinor(t, g.UUID)
	keeper := sb.keeperPID(t, empty.AllocationID)
	require.NoError(t, unix.Mknod(fmt.Sprintf("/proc/%d/root/dev/nvidia%d", keeper, minor), unix.S_IFCHR|0o666,
		int(unix.Mkdev(nvidiaMajor, uint32(minor)))))
	out, _ = sb.runScript(t, empty, fmt.Sprintf(`head -c1 /dev/nvidia%d 2>&1 >/dev/null | sed 's/.*: //'`, minor))
	t.Logf("empty opening the GPU's node: %s", out)
	require.Equal(t, "Operation not permitted\n", out)
}

// writeDriverCDISpec writes, for a machine without the NVIDIA container
// toolkit, the device part of what `nvidia-ctk cdi generate` writes: each
// GPU by index and UUID with its /dev/nvidia<minor>, and the driver's
// control devices for all.
func writeDriverCDISpec(t *testing.T, gpus []wire.InventoryGPU) string {
	t.Helper()
	spec := cdispec.Spec{Version: "0.6.0", Kind: gpuCDIKind}
	for _, d := range []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"} {
		if _, err := os.Stat(d); err == nil {
			spec.ContainerEdits.DeviceNodes = append(spec.ContainerEdits.DeviceNodes, &cdispec.DeviceNode{Path: d})
		}
	}
	for i, g := range gpus {
		node := fmt.Sprintf("/dev/nvidia%d", driverMinor(t, g.UUID))
		edits := cdispec.ContainerEdits{DeviceNodes: []*cdispec.DeviceNode{{Path: node}}}
		spec.Devices = append(spec.Devices, cdispec.Device{Name: strconv.Itoa(i), ContainerEdits: edits},
			cdispec.Device{Name: g.UUID, ContainerEdits: edits})
	}
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nvidia.json"), b, 0o644))
	t.Logf("CDI spec: %s", b)
	return dir
}

// driverMinor is the device minor of the GPU with uuid, from
// /proc/driver/nvidia/gpus/*/information ("Device Minor").
func driverMinor(t *testing.T, uuid string) int {
	t.Helper()
	files, _ := filepath.Glob("/proc/driver/nvidia/gpus/*/information")
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		minor, match := -1, false
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ":")
			switch strings.TrimSpace(k) {
			case "GPU UUID":
				match = strings.TrimSpace(v) == uuid
			case "Device Minor":
				minor, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		fh.Close()
		if match {
			return minor
		}
	}
	t.Fatalf("no /proc/driver/nvidia entry for %s", uuid)
	return -1
}
