package queries

import (
	"context"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// Tenant is a tenant as the read API shows it.
type Tenant struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	// Suspended is whether an operator suspended the tenant; SuspendedAt
	// and SuspendedReason say when and why while it is.
	Suspended       bool       `json:"suspended"`
	SuspendedAt     *time.Time `json:"suspendedAt,omitempty"`
	SuspendedReason string     `json:"suspendedReason,omitempty"`
}

// tenantOf is a tenant row as the read API shows it.
func tenantOf(id string, createdAt time.Time, suspendedAt *time.Time, reason *string) Tenant {
	t := Tenant{ID: id, CreatedAt: createdAt.UTC(), Suspended: suspendedAt != nil}
	if suspendedAt != nil {
		at := suspendedAt.UTC()
		t.SuspendedAt = &at
	}
	if reason != nil {
		t.SuspendedReason = *reason
	}
	return t
}

// GetTenant reads one tenant. Operators read any; anyone else only its own
// tenant, and another tenant is NOT_FOUND with the message an unknown one
// gets, so its existence is never revealed.
func (s *Service) GetTenant(ctx context.Context, actor core.Actor, id string) (Tenant, error) {
	if !actor.Sees(id) {
		return Tenant{}, core.Errorf(core.CodeNotFound, "tenant %s not found", id)
	}
	r, err := s.q().TenantGet(ctx, id)
	if err != nil {
		return Tenant{}, wrap(err, "tenant "+id)
	}
	return tenantOf(r.ID, r.CreatedAt, r.SuspendedAt, r.SuspendedReason), nil
}

// ListTenants is a page request of the tenant list.
type ListTenants struct {
	Cursor string
	Limit  int
}

// ListTenants pages through the tenants in id order: every tenant for an
// operator, the caller's own alone for anyone else.
func (s *Service) ListTenants(ctx context.Context, actor core.Actor, l ListTenants) (items []Tenant, nextCursor string, err error) {
	limit, after, err := keysetPage("tenant", l.Cursor, l.Limit)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.q().TenantList(ctx, db.TenantListParams{OnlyID: tenantFilter(actor, ""), AfterID: after,
		MaxRows: int32(limit + 1)})
	if err != nil {
		return nil, "", wrap(err, "tenants")
	}
	return pageOf(rows, limit, "tenant", func(r db.TenantListRow) []string { return []string{r.ID} },
		func(r db.TenantListRow) Tenant { return tenantOf(r.ID, r.CreatedAt, r.SuspendedAt, r.SuspendedReason) })
}

// Quota is one resource of a tenant's quota: the most it may hold at once
// (Max) and what its live reservations hold now (Used). Resources are gpu,
// gpu:<model>, vcpu, memory (MB) and disk (GB).
type Quota struct {
	Tenant   string `json:"tenant"`
	Resource string `json:"resource"`
	Max      int64  `json:"max"`
	Used     int64  `json:"used"`
	Version  int64  `json:"version"`
}

// ListQuotas is a page request of one tenant's quotas.
type ListQuotas struct {
	Tenant string
	Cursor string
	Limit  int
}

// ListQuotas pages through a tenant's quotas in resource order. Operators
// read any tenant's; anyone else only its own (another tenant is
// NOT_FOUND, as in GetTenant, and so is a tenant that does not exist). A
// tenant without quotas has an empty list: it may reserve nothing.
func (s *Service) ListQuotas(ctx context.Context, actor core.Actor, l ListQuotas) (items []Quota, nextCursor string, err error) {
	if _, err := s.GetTenant(ctx, actor, l.Tenant); err != nil {
		return nil, "", err
	}
	limit, after, err := keysetPage("quota", l.Cursor, l.Limit)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.q().QuotaUsagePage(ctx, db.QuotaUsagePageParams{TenantID: l.Tenant, AfterResource: after,
		MaxRows: int32(limit + 1)})
	if err != nil {
		return nil, "", wrap(err, "quotas of "+l.Tenant)
	}
	return pageOf(rows, limit, "quota", func(r db.QuotaUsage) []string { return []string{r.Resource} },
		func(r db.QuotaUsage) Quota {
			return Quota{Tenant: r.TenantID, Resource: r.Resource, Max: r.Max, Used: r.Used, Version: r.Version}
		})
}
