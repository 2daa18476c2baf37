package queries

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// Priority classes and the tenants' allow-lists have no read model either
// (see sites.go): they are read from their tables, always current.

// PriorityClass is a priority class as the read API shows it
// (docs/concepts/priority.md).
type PriorityClass struct {
	Name         string    `json:"name"`
	Value        int32     `json:"value"`
	Preemptible  bool      `json:"preemptible"`
	GraceSeconds int32     `json:"graceSeconds"`
	Description  string    `json:"description"`
	IsDefault    bool      `json:"isDefault"`
	Version      int64     `json:"version"`
	CreatedAt    time.Time `json:"createdAt"`
}

func priorityClassOf(r db.PriorityClass) PriorityClass {
	return PriorityClass{Name: r.Name, Value: r.Value, Preemptible: r.Preemptible, GraceSeconds: r.GraceSeconds,
		Description: r.Description, IsDefault: r.IsDefault, Version: r.Version, CreatedAt: r.CreatedAt.UTC()}
}

// GetPriorityClass reads one class. Classes hold no tenant's data: every
// caller may read them, as every caller may name one in a reservation.
func (s *Service) GetPriorityClass(ctx context.Context, _ core.Actor, name string) (PriorityClass, error) {
	r, err := s.q().PriorityClassGet(ctx, name)
	if err != nil {
		return PriorityClass{}, wrap(err, "priority class "+name)
	}
	return priorityClassOf(r), nil
}

// ListPriorityClasses is a page request of the class list.
type ListPriorityClasses struct {
	Cursor string
	Limit  int
}

// ListPriorityClasses pages through the classes in name order.
func (s *Service) ListPriorityClasses(ctx context.Context, _ core.Actor, l ListPriorityClasses) (items []PriorityClass, nextCursor string, err error) {
	limit, after, err := keysetPage("pclass", l.Cursor, l.Limit)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.q().PriorityClassList(ctx, db.PriorityClassListParams{AfterName: after, MaxRows: int32(limit + 1)})
	if err != nil {
		return nil, "", wrap(err, "priority classes")
	}
	return pageOf(rows, limit, "pclass", func(r db.PriorityClass) []string { return []string{r.Name} }, priorityClassOf)
}

// TenantPriorityClasses is a tenant's allow-list: Classes as an operator
// set them (in name order), DefaultClass the class every tenant may use,
// Allowed both together (what the tenant may name in a reservation), and
// the version of the set (0 before it was first set).
type TenantPriorityClasses struct {
	Tenant       string   `json:"tenant"`
	Classes      []string `json:"classes"`
	DefaultClass string   `json:"defaultClass"`
	Allowed      []string `json:"allowed"`
	Version      int64    `json:"version"`
}

// GetTenantPriorityClasses reads a tenant's allow-list. Operators read any
// tenant's; anyone else its own only (another tenant is NOT_FOUND with the
// message an unknown one gets, as in GetTenant).
func (s *Service) GetTenantPriorityClasses(ctx context.Context, actor core.Actor, tenant string) (TenantPriorityClasses, error) {
	if !actor.Sees(tenant) {
		return TenantPriorityClasses{}, core.Errorf(core.CodeNotFound, "tenant %s not found", tenant)
	}
	r, err := s.q().TenantPriorityClassesGet(ctx, tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return TenantPriorityClasses{}, core.Errorf(core.CodeNotFound, "tenant %s not found", tenant)
	}
	if err != nil {
		return TenantPriorityClasses{}, wrap(err, "priority classes of tenant "+tenant)
	}
	allowed := slices.Clone(r.Classes)
	if r.DefaultClass != "" {
		allowed = append(allowed, r.DefaultClass)
	}
	slices.Sort(allowed)
	return TenantPriorityClasses{Tenant: r.TenantID, Classes: append([]string{}, r.Classes...), DefaultClass: r.DefaultClass,
		Allowed: append([]string{}, slices.Compact(allowed)...), Version: r.Version}, nil
}
