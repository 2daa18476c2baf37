package core

import "time"

// Fair share of the waiting line (docs/concepts/fair-share.md): pending
// reservations are tried in order of their tenant's decayed GPU usage
// divided by the tenant's share, so that a tenant that used less than its
// share recently goes before one that used more.
const (
	// MinFairShare and MaxFairShare bound a tenant's share; a tenant an
	// operator never gave one has DefaultFairShare.
	MinFairShare     = 1
	MaxFairShare     = 1_000_000
	DefaultFairShare = 1
	// DefaultFairShareHalfLife is how long it takes for usage to count half
	// as much: 7 days, Slurm's PriorityDecayHalfLife default, so that last
	// week's usage weighs half of today's and last month's a sixteenth.
	DefaultFairShareHalfLife = 7 * 24 * time.Hour
)

// TenantFairShareEventData is the data of tenant.fair_share_set: a tenant's
// new share and the version of its share.
type TenantFairShareEventData struct {
	Tenant  string `json:"tenant"`
	Share   int32  `json:"share"`
	Version int64  `json:"version"`
}

// TenantFairShareSubject names the events of a tenant's share.
func TenantFairShareSubject(tenant string) string { return "tenants/" + tenant + "/fair-share" }

// QueueScope names the waiting line of the reservations that name pool
// poolID, or, when poolID is empty, site siteID: "pool:<id>" or
// "site:<id>". It is the key of the line's work item and the scope its
// positions are shown with.
func QueueScope(poolID, siteID string) string {
	if poolID != "" {
		return "pool:" + poolID
	}
	return "site:" + siteID
}
