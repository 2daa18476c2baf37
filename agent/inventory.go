package agent

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bettercompute/compute/wire"
)

// GPU is one GPU of the node's inventory, as the node joins with it.
type GPU struct {
	UUID     string `json:"uuid"`
	Model    string `json:"model"`
	MemoryMB int64  `json:"memoryMb"`
}

// Inventory is what the daemon registers its node with.
type Inventory struct {
	PoolID   string `json:"poolId"`
	VCPU     int64  `json:"vcpu"`
	MemoryMB int64  `json:"memoryMb"`
	DiskGB   int64  `json:"diskGb"`
	GPUs     []GPU  `json:"gpus"`
}

// NoGPUs as --fake-gpus is a node without GPUs (no nvidia-smi is run).
const NoGPUs = "none"

// nvidiaSMITimeout bounds one nvidia-smi run: a wedged driver must not
// wedge the daemon's start.
const nvidiaSMITimeout = 30 * time.Second

// maxFakeGPUs is the most GPUs a node may have, as the control plane
// counts them (core.MaxNodeGPUs): a fake inventory of more would not join.
const maxFakeGPUs = 64

var fakeGPUGroup = regexp.MustCompile(`^(\d+)x([A-Za-z0-9._]+)-(\d+)GB$`)

// FakeGPUs parses a fake inventory such as "8xH100-80GB" or
// "4xA100-40GB,2xL4-24GB", so the whole system runs on a machine without
// GPUs. Models are named as real GPUs are ("H100-80GB", see ModelName),
// with <memory> GiB of memory. UUIDs are derived from the node id: stable
// across restarts, unique across the fleet. "" and NoGPUs are no GPUs.
func FakeGPUs(nodeID, spec string) ([]GPU, error) {
	var out []GPU
	if s := strings.TrimSpace(spec); s == "" || s == NoGPUs {
		return out, nil
	}
	for _, group := range strings.Split(spec, ",") {
		m := fakeGPUGroup.FindStringSubmatch(strings.TrimSpace(group))
		if m == nil {
			return nil, fmt.Errorf("fake GPUs %q: want <count>x<model>-<memory>GB, e.g. 8xH100-80GB", group)
		}
		n, _ := strconv.Atoi(m[1])
		gb, _ := strconv.ParseInt(m[3], 10, 64)
		if n <= 0 || n > 64 || gb <= 0 {
			return nil, fmt.Errorf("fake GPUs %q: count must be 1..64 and memory positive", group)
		}
		if len(out)+n > maxFakeGPUs {
			return nil, fmt.Errorf("fake GPUs %q: a node has at most %d GPUs", spec, maxFakeGPUs)
		}
		for range n {
			out = append(out, GPU{UUID: fmt.Sprintf("GPU-%s-%d", nodeID, len(out)), Model: m[2] + "-" + m[3] + "GB",
				MemoryMB: gb * 1024})
		}
	}
	return out, nil
}

// inventoryGPUs is the node's GPUs as the daemon knows them: the fake
// inventory when there is one (or none at all with NoGPUs), else what
// nvidia-smi reports.
func inventoryGPUs(ctx context.Context, nodeID, fake string) ([]wire.InventoryGPU, error) {
	if strings.TrimSpace(fake) != "" {
		gpus, err := FakeGPUs(nodeID, fake)
		if err != nil {
			return nil, err
		}
		out := make([]wire.InventoryGPU, len(gpus))
		for i, g := range gpus {
			out[i] = wire.InventoryGPU{UUID: g.UUID, Model: g.Model, MemoryMB: g.MemoryMB}
		}
		return out, nil
	}
	return NvidiaSMIGPUs(ctx)
}

// joinGPUs is the inventory in the form the join registers.
func joinGPUs(gpus []wire.InventoryGPU) []GPU {
	out := make([]GPU, len(gpus))
	for i, g := range gpus {
		out[i] = GPU{UUID: g.UUID, Model: g.Model, MemoryMB: g.MemoryMB}
	}
	return out
}

// NvidiaSMIGPUs reads the GPUs of this machine from nvidia-smi (the first
// on PATH): uuid, name, memory and MIG mode from
// `nvidia-smi --query-gpu=uuid,name,memory.total,mig.mode.current
// --format=csv,noheader,nounits`, and MIG instances from `nvidia-smi -L`.
// A failing nvidia-smi or output it cannot read is an error saying so.
func NvidiaSMIGPUs(ctx context.Context) ([]wire.InventoryGPU, error) {
	query, err := nvidiaSMI(ctx, "--query-gpu=uuid,name,memory.total,mig.mode.current", "--format=csv,noheader,nounits")
	if err != nil {
		return nil, err
	}
	gpus, err := parseGPUQuery(query)
	if err != nil {
		return nil, err
	}
	list, err := nvidiaSMI(ctx, "-L")
	if err != nil {
		return nil, err
	}
	migs, err := parseGPUList(list)
	if err != nil {
		return nil, err
	}
	for i := range gpus {
		gpus[i].MIG = migs[gpus[i].UUID]
	}
	return gpus, nil
}

func nvidiaSMI(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, nvidiaSMITimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nvidia-smi", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		why := err.Error()
		if errors.As(err, &exitErr) {
			why = fmt.Sprintf("exit status %d", exitErr.ExitCode())
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(string(out))
		}
		if len(msg) > 512 {
			msg = msg[:512] + "…"
		}
		if msg != "" {
			why += ": " + msg
		}
		return nil, fmt.Errorf("GPU inventory: nvidia-smi %s failed (%s); is the NVIDIA driver loaded? "+
			"(a machine without GPUs: --fake-gpus %s, or a fake inventory such as --fake-gpus 8xH100-80GB)",
			strings.Join(args, " "), why, NoGPUs)
	}
	return out, nil
}

// parseGPUQuery reads `nvidia-smi --query-gpu=uuid,name,memory.total,
// mig.mode.current --format=csv,noheader,nounits`.
func parseGPUQuery(b []byte) ([]wire.InventoryGPU, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = -1
	var out []wire.InventoryGPU
	for line := 1; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		bad := func(why string) error {
			return fmt.Errorf("GPU inventory: cannot read nvidia-smi --query-gpu line %d %q: %s "+
				"(want: uuid, name, memory.total in MiB, mig.mode.current)", line, strings.Join(rec, ","), why)
		}
		if err != nil {
			return nil, fmt.Errorf("GPU inventory: cannot read nvidia-smi --query-gpu output: %w", err)
		}
		if len(rec) != 4 {
			return nil, bad(fmt.Sprintf("%d fields", len(rec)))
		}
		uuid, name := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if !strings.HasPrefix(uuid, "GPU-") {
			return nil, bad("not a GPU UUID")
		}
		mib, err := strconv.ParseInt(strings.TrimSpace(rec[2]), 10, 64)
		if err != nil || mib <= 0 {
			return nil, bad("memory.total is not a positive number of MiB")
		}
		model, err := ModelName(name, mib)
		if err != nil {
			return nil, bad(err.Error())
		}
		g := wire.InventoryGPU{UUID: uuid, Name: name, Model: model, MemoryMB: mib}
		capable := true
		switch mode := strings.TrimSpace(rec[3]); mode {
		case "Enabled":
			g.MIGEnabled = true
		case "Disabled":
		case "[N/A]", "N/A", "[Not Supported]": // a GPU without MIG (an L4, a T4…)
			capable = false
		default:
			return nil, bad(fmt.Sprintf("unknown MIG mode %q", mode))
		}
		g.MIGCapable = &capable
		out = append(out, g)
	}
	if len(out) == 0 {
		return nil, errors.New("GPU inventory: nvidia-smi lists no GPU (a machine without GPUs: --fake-gpus " + NoGPUs + ")")
	}
	return out, nil
}

var (
	listGPULine = regexp.MustCompile(`^GPU\s+(\d+):\s+(.+?)\s+\(UUID:\s+(GPU-[^)\s]+)\)\s*$`)
	listMIGLine = regexp.MustCompile(`^\s+MIG\s+(\S+)\s+Device\s+(\d+):\s+\(UUID:\s+(MIG-[^)\s]+)\)\s*$`)
)

// parseGPUList reads `nvidia-smi -L`: GPU lines, each followed by its MIG
// instances, and returns the instances by GPU UUID.
func parseGPUList(b []byte) (map[string][]wire.InventoryMIG, error) {
	out := map[string][]wire.InventoryMIG{}
	gpu := ""
	for i, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if m := listGPULine.FindStringSubmatch(line); m != nil {
			gpu = m[3]
			continue
		}
		if m := listMIGLine.FindStringSubmatch(line); m != nil && gpu != "" {
			idx, _ := strconv.Atoi(m[2])
			out[gpu] = append(out[gpu], wire.InventoryMIG{UUID: m[3], Profile: m[1], Index: idx})
			continue
		}
		return nil, fmt.Errorf("GPU inventory: cannot read nvidia-smi -L line %d %q (want \"GPU <n>: <name> (UUID: GPU-…)\" "+
			"or \"  MIG <profile> Device <n>: (UUID: MIG-…)\")", i+1, line)
	}
	return out, nil
}

// vendorWords are dropped from a product name before its model token.
var vendorWords = map[string]bool{"NVIDIA": true, "Tesla": true, "GeForce": true, "Quadro": true}

// ModelName is the fleet's name of a GPU model, as pools and quotas use
// it: the product token, a dash, and the memory in marketing GB, e.g.
// "NVIDIA H100 80GB HBM3" with 81559 MiB is "H100-80GB" and "NVIDIA
// A100-SXM4-40GB" with 40960 MiB is "A100-40GB".
//
// The product token is the first word of the name after the vendor words
// (NVIDIA, Tesla, GeForce, Quadro), cut at its first dash, so that form
// factors go (-SXM4, -PCIE; words after it such as NVL, PCIe or HBM3 are
// not part of it); "RTX" and "GTX" are joined to the word after them
// ("NVIDIA RTX A6000" is "RTXA6000"). The memory is MiB/1024 rounded up to
// a multiple of 8 when that is within 10% (81559 MiB is 79.6 GiB: 80;
// 23034 MiB is 22.5 GiB: 24), else rounded to the nearest GB.
func ModelName(name string, memoryMiB int64) (string, error) {
	var words []string
	for _, w := range strings.Fields(name) {
		if !vendorWords[w] {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return "", fmt.Errorf("no product in GPU name %q", name)
	}
	product := words[0]
	if (product == "RTX" || product == "GTX") && len(words) > 1 {
		product += words[1]
	}
	product, _, _ = strings.Cut(product, "-")
	if product == "" || strings.ContainsAny(product, "(),") {
		return "", fmt.Errorf("no product in GPU name %q", name)
	}
	return fmt.Sprintf("%s-%dGB", product, marketingGB(memoryMiB)), nil
}

// marketingGB is the memory size a GPU is sold with (see ModelName).
func marketingGB(mib int64) int64 {
	gib := float64(mib) / 1024
	up8 := math.Ceil(gib/8) * 8
	if up8 <= gib*1.10 {
		return int64(up8)
	}
	return int64(math.Round(gib))
}
