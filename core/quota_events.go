package core

// QuotaEventData is the data of quota.set, written when an operator sets a
// tenant's quota for one resource (gpu, gpu:<model>, vcpu, memory in MB or
// disk in GB).
type QuotaEventData struct {
	Tenant   string `json:"tenant"`
	Resource string `json:"resource"`
	Max      int64  `json:"max"`
	Version  int64  `json:"version"`
}
