package agent

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// GPU is one GPU of the node's inventory.
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

var fakeGPUGroup = regexp.MustCompile(`^(\d+)x([A-Za-z0-9._]+)-(\d+)GB$`)

// FakeGPUs parses a fake inventory such as "8xH100-80GB" or
// "4xA100-40GB,2xL4-24GB", so the whole system runs on a machine without
// GPUs. UUIDs are derived from the node id: stable across restarts, unique
// across the fleet.
func FakeGPUs(nodeID, spec string) ([]GPU, error) {
	var out []GPU
	if strings.TrimSpace(spec) == "" {
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
		for range n {
			out = append(out, GPU{UUID: fmt.Sprintf("GPU-%s-%d", nodeID, len(out)), Model: m[2], MemoryMB: gb * 1024})
		}
	}
	return out, nil
}
