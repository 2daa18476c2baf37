package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/bettercompute/compute/wire"
)

// A workload's GPUs reach its container through the Container Device
// Interface (CDI), the way containerd and podman inject them: a CDI spec
// names each GPU (by index and by UUID; MIG instances by UUID) and says
// which device nodes, mounts and hooks it takes; the CDI library adds them
// to the container's OCI spec, device cgroup rules included. On a real
// node `nvidia-ctk cdi generate --device-name-strategy=index
// --device-name-strategy=uuid` writes that spec (GPUs, MIG devices,
// /dev/nvidia-caps, the driver's libraries); with --fake-gpus the daemon
// makes character devices of its own (major 195, as the NVIDIA driver's)
// and a CDI spec for them, so a test takes the path a real node takes and
// the kernel guards the fake devices exactly as real ones.

// DefaultCDISpecDirs are where CDI specs are looked for, as containerd
// does: /etc/cdi, then /var/run/cdi.
var DefaultCDISpecDirs = []string{"/etc/cdi", "/var/run/cdi"}

// gpuCDIKind is the CDI kind of NVIDIA GPUs, as nvidia-ctk writes it.
const gpuCDIKind = "nvidia.com/gpu"

// nvidiaMajor is the character-device major number of NVIDIA GPUs;
// nvidiactlMinor is the driver's control device (/dev/nvidiactl).
const (
	nvidiaMajor    = 195
	nvidiactlMinor = 255
)

// deviceRegistry resolves an allocation's devices to CDI devices and
// injects them into a container's spec.
type deviceRegistry struct {
	cache *cdi.Cache
	gpus  []wire.InventoryGPU
}

// openDeviceRegistry reads the CDI specs in dirs. A directory that does
// not exist is no error; a spec that cannot be parsed is (a node that
// cannot describe its GPUs must not run GPU workloads).
func openDeviceRegistry(dirs []string, gpus []wire.InventoryGPU) (*deviceRegistry, error) {
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dirs...), cdi.WithAutoRefresh(false))
	if err != nil {
		return nil, fmt.Errorf("CDI specs in %v: %w", dirs, err)
	}
	for path, errs := range cache.GetErrors() {
		if len(errs) > 0 {
			return nil, fmt.Errorf("CDI spec %s: %w", path, errors.Join(errs...))
		}
	}
	return &deviceRegistry{cache: cache, gpus: gpus}, nil
}

// names are the CDI devices of an assignment: per device, its Visible
// value (a GPU or MIG UUID; a slot's parent GPU) when a spec names it so,
// else the GPU's index; each once.
func (r *deviceRegistry) names(a *wire.AssignPayload) ([]string, error) {
	if a == nil {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, d := range a.Devices {
		candidates := []string{gpuCDIKind + "=" + d.Visible}
		if d.Kind == "mig" { // a fake GPU's instance (writeFakeGPUSpec); never in a real spec
			candidates = append(candidates, gpuCDIKind+"="+fakeMIGDeviceName(d.ID))
		}
		if d.Kind != "mig" {
			for i, g := range r.gpus {
				if g.UUID == d.GPU {
					candidates = append(candidates, gpuCDIKind+"="+strconv.Itoa(i))
				}
			}
		}
		name := ""
		for _, c := range candidates {
			if r.cache.GetDevice(c) != nil {
				name = c
				break
			}
		}
		if name == "" {
			return nil, fmt.Errorf("no CDI device for %s (looked for %v in %v): generate the node's CDI spec "+
				"(nvidia-ctk cdi generate)", d.ID, candidates, r.cache.GetSpecDirectories())
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out, nil
}

// inject adds the assignment's GPUs to spec: their device nodes, their
// device cgroup allow rules and whatever else their CDI spec says.
func (r *deviceRegistry) inject(spec *specs.Spec, a *wire.AssignPayload) error {
	names, err := r.names(a)
	if err != nil || len(names) == 0 {
		return err
	}
	if _, err := r.cache.InjectDevices(spec, names...); err != nil {
		return fmt.Errorf("inject %v: %w", names, err)
	}
	return nil
}

// maxMIGInstances is how many MIG instances one GPU can have (one per
// compute slice).
const maxMIGInstances = 7

// fakeMIGDeviceName is the CDI name of a fake GPU's MIG instance: its atom
// id (<uuid>/mig-<k>) with '/', which CDI names may not hold, as '_'.
func fakeMIGDeviceName(atomID string) string { return strings.ReplaceAll(atomID, "/", "_") }

// writeFakeGPUSpec makes the fake GPUs' device nodes under dir/dev
// (nvidia<i> as c 195:<i>, nvidiactl as c 195:255, mode 0666 as the
// NVIDIA driver makes them) and a CDI spec naming each GPU by index and
// UUID, and each of its possible MIG instances by atom id
// (fakeMIGDeviceName), in dir/cdi, which it returns. Fake GPUs have no driver: opening an
// allowed node gives ENXIO, a forbidden one EPERM, which is all isolation
// needs to be tested.
func writeFakeGPUSpec(dir string, gpus []wire.InventoryGPU) (string, error) {
	devDir, cdiDir := filepath.Join(dir, "dev"), filepath.Join(dir, "cdi")
	for _, d := range []string{devDir, cdiDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", fmt.Errorf("fake GPUs: %w", err)
		}
	}
	node := func(name string, minor uint32) (string, error) {
		path := filepath.Join(devDir, name)
		if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(nvidiaMajor, minor))); err != nil &&
			!errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("fake GPU device %s: %w", path, err)
		}
		// mknod's mode goes through the umask (0644 under the usual 022),
		// and a node an earlier daemon made keeps its mode: CUDA opens
		// its devices read-write, so a 0644 node would be EACCES before
		// the device cgroup decides. The CDI library copies this mode into
		// the container.
		if err := os.Chmod(path, 0o666); err != nil {
			return "", fmt.Errorf("fake GPU device %s: %w", path, err)
		}
		return path, nil
	}
	ctl, err := node("nvidiactl", nvidiactlMinor)
	if err != nil {
		return "", err
	}
	spec := cdispec.Spec{Version: "0.6.0", Kind: gpuCDIKind, ContainerEdits: cdispec.ContainerEdits{
		DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/nvidiactl", HostPath: ctl}}}}
	for i, g := range gpus {
		path, err := node("nvidia"+strconv.Itoa(i), uint32(i))
		if err != nil {
			return "", err
		}
		edits := cdispec.ContainerEdits{DeviceNodes: []*cdispec.DeviceNode{
			{Path: "/dev/nvidia" + strconv.Itoa(i), HostPath: path}}}
		spec.Devices = append(spec.Devices, cdispec.Device{Name: strconv.Itoa(i), ContainerEdits: edits},
			cdispec.Device{Name: g.UUID, ContainerEdits: edits})
		// A fake GPU has no MIG instances of its own to report, so its
		// instances are named by their atom ids, each its GPU's node.
		for k := range maxMIGInstances {
			spec.Devices = append(spec.Devices, cdispec.Device{
				Name: fakeMIGDeviceName(fmt.Sprintf("%s/mig-%d", g.UUID, k)), ContainerEdits: edits})
		}
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return "", err
	}
	if err := writeFileDurable(filepath.Join(cdiDir, "fake-gpus.json"), b, 0o644); err != nil {
		return "", fmt.Errorf("fake GPUs' CDI spec: %w", err)
	}
	return cdiDir, nil
}
