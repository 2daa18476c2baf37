package core

import "strings"

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

// GPUModelQuota is the quota resource for one GPU model: "gpu:<model>".
func GPUModelQuota(model string) string { return "gpu:" + model }

// ValidQuotaResource says why r cannot name a quota resource, or nil: it
// is gpu, vcpu, memory, disk, or gpu:<model> for any model a GPU can have
// (ValidGPUModel). A model quota is matched exactly against the models of
// the GPUs placement books, and those are what nvidia-smi prints ("NVIDIA
// H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", spaces included), so every name
// the inventory accepts must be a key a quota can have: a narrower rule
// left such GPUs with no possible model quota.
func ValidQuotaResource(r string) error {
	switch r {
	case ResourceGPU, ResourceVCPU, ResourceMemory, ResourceDisk:
		return nil
	}
	model, ok := strings.CutPrefix(r, GPUModelQuota(""))
	if !ok {
		return Errorf(CodeInvalidArgument, "quota resource %q is not gpu, gpu:<model>, vcpu, memory or disk", Clip(r, 64))
	}
	if err := ValidGPUModel(model); err != nil {
		return Errorf(CodeInvalidArgument,
			"quota resource %q is not gpu:<model>: the model must be 1 to %d bytes of printable characters, as a GPU's model is",
			Clip(r, 64), MaxGPUModel)
	}
	return nil
}
