package queries

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// TenantFairShare is a tenant's share of the waiting line and the decayed
// usage its reservations are ranked by (docs/concepts/fair-share.md).
type TenantFairShare struct {
	Tenant string `json:"tenant"`
	// Share is what an operator set, 1 when none did.
	Share int32 `json:"share"`
	// Version counts the changes of the share; 0 while it was never set.
	Version int64 `json:"version"`
	// UsageGPUHours is the tenant's GPU time (atoms × hours) with each
	// instant weighted 2^(-age/half-life), as of AsOf.
	UsageGPUHours float64 `json:"usageGpuHours"`
	// HalfLifeHours is the half-life the usage decays with.
	HalfLifeHours float64   `json:"halfLifeHours"`
	AsOf          time.Time `json:"asOf"`
}

// GetTenantFairShare reads a tenant's share and computes its decayed usage
// now, from the write model (allocations and reservations): the same usage
// the waiting line is ranked by, never behind a projection. Operators read
// any tenant's; anyone else its own only (another tenant is NOT_FOUND with
// the message an unknown one gets, as in GetTenant).
func (s *Service) GetTenantFairShare(ctx context.Context, actor core.Actor, tenant string) (TenantFairShare, error) {
	if !actor.Sees(tenant) {
		return TenantFairShare{}, core.Errorf(core.CodeNotFound, "tenant %s not found", tenant)
	}
	halfLife := s.FairShareHalfLife
	if halfLife <= 0 {
		halfLife = core.DefaultFairShareHalfLife
	}
	r, err := s.q().TenantFairShareGet(ctx, db.TenantFairShareGetParams{TenantID: tenant, HalfLifeSeconds: halfLife.Seconds()})
	if errors.Is(err, pgx.ErrNoRows) {
		return TenantFairShare{}, core.Errorf(core.CodeNotFound, "tenant %s not found", tenant)
	}
	if err != nil {
		return TenantFairShare{}, wrap(err, "fair share of tenant "+tenant)
	}
	return TenantFairShare{Tenant: r.TenantID, Share: r.Share, Version: r.Version, UsageGPUHours: r.UsageGpuHours,
		HalfLifeHours: halfLife.Hours(), AsOf: r.AsOf.UTC()}, nil
}
