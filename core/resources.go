package core

import "regexp"

// Scalar resources a node offers as counters (node_resources.resource).
const (
	ResourceVCPU   = "vcpu"
	ResourceMemory = "memory" // MB
	ResourceDisk   = "disk"   // GB
	// ResourceGPU is the quota resource counting GPU atoms of any kind.
	ResourceGPU = "gpu"
)

// ScalarResources lists the node counters in lock order.
var ScalarResources = []string{ResourceDisk, ResourceMemory, ResourceVCPU}

var quotaResourcePattern = regexp.MustCompile(`^(gpu|gpu:[A-Za-z0-9._-]{1,128}|vcpu|memory|disk)$`)

// GPUModelQuota is the quota resource for one GPU model: "gpu:<model>".
func GPUModelQuota(model string) string { return "gpu:" + model }

// ValidQuotaResource reports whether r names a quota resource: gpu,
// gpu:<model>, vcpu, memory or disk.
func ValidQuotaResource(r string) bool { return quotaResourcePattern.MatchString(r) }
