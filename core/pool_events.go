package core

// PoolEventData is the data of pool.created, written when an operator
// creates a pool: the pool as written, with its overcommit ratios.
type PoolEventData struct {
	ID     string `json:"id"`
	SiteID string `json:"siteId"`
	// Kind is bare-metal, provider or vps-host.
	Kind string `json:"kind"`
	// CPURatio, MemoryRatio and DiskRatio are the overcommit ratios of
	// vCPU, memory and disk (1 is none).
	CPURatio    float64 `json:"cpuRatio"`
	MemoryRatio float64 `json:"memoryRatio"`
	DiskRatio   float64 `json:"diskRatio"`
	// WorkloadNetwork is none, bridge or host. Commands always write it;
	// events written before pools had one lack it, which means none.
	WorkloadNetwork string `json:"workloadNetwork,omitempty"`
	Version         int64  `json:"version"`
}
