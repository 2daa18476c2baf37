package commands

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// SetTenantPriorityClasses replaces the priority classes a tenant may use
// besides the default class, which every tenant may use: Classes is the
// whole new set (empty: the default class only).
type SetTenantPriorityClasses struct {
	Tenant  string   `json:"tenant"`
	Classes []string `json:"classes"`
}

// TenantPriorityClassesResult is a tenant's allow-list after the change:
// Classes as set (in name order), Allowed what the tenant may use (Classes
// and the default class), the version of the set (0 before it was first
// set) and the position of the event written (zero when nothing changed).
type TenantPriorityClassesResult struct {
	Tenant       string          `json:"tenant"`
	Classes      []string        `json:"classes"`
	DefaultClass string          `json:"defaultClass"`
	Allowed      []string        `json:"allowed"`
	Version      int64           `json:"version"`
	Position     outbox.Position `json:"position"`
}

// tenantPriorityClassesOf is the result of a row of TenantPriorityClassesGet.
func tenantPriorityClassesOf(r db.TenantPriorityClassesGetRow) TenantPriorityClassesResult {
	return TenantPriorityClassesResult{Tenant: r.TenantID, Classes: append([]string{}, r.Classes...), DefaultClass: r.DefaultClass,
		Allowed: allowedPriorityClasses(r.Classes, r.DefaultClass), Version: r.Version}
}

// allowedPriorityClasses is what a tenant whose allow-list names classes
// may use: those and the default class, in name order.
func allowedPriorityClasses(classes []string, defaultClass string) []string {
	out := slices.Clone(classes)
	if defaultClass != "" {
		out = append(out, defaultClass)
	}
	slices.Sort(out)
	return append([]string{}, slices.Compact(out)...)
}

// SetTenantPriorityClasses runs tenants.priority-classes.set (operator
// only). The tenant id follows the rule of tokens.create (INVALID_ARGUMENT)
// and the tenant must exist (NOT_FOUND); every class must exist
// (INVALID_ARGUMENT, naming it) and be named once. It locks the tenant row,
// replaces the set and appends tenant.priority_classes_set with the whole
// new set and its version, in one transaction. The set the tenant has
// already writes nothing and appends no event. Reservations already made
// keep their class: the allow-list is checked when one is created.
func (h *Handlers) SetTenantPriorityClasses(ctx context.Context, actor core.Actor, cmd SetTenantPriorityClasses) (TenantPriorityClassesResult, error) {
	if err := requireOperator(actor, "tenants.priority-classes.set"); err != nil {
		return TenantPriorityClassesResult{}, err
	}
	if !tokenTenantPattern.MatchString(cmd.Tenant) {
		return TenantPriorityClassesResult{}, core.Errorf(core.CodeInvalidArgument,
			"tenant %q is invalid: use 1 to 63 lower-case letters, digits or '-', starting with a letter or digit", cmd.Tenant)
	}
	classes := slices.Sorted(slices.Values(cmd.Classes))
	for i, c := range classes {
		if !core.ValidPriorityClassName(c) {
			return TenantPriorityClassesResult{}, core.Errorf(core.CodeInvalidArgument, "priority class %q does not exist", c)
		}
		if i > 0 && classes[i-1] == c {
			return TenantPriorityClassesResult{}, core.Errorf(core.CodeInvalidArgument, "priority class %s is listed twice", c)
		}
	}
	var res TenantPriorityClassesResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		var err error
		res, err = setTenantPriorityClasses(ctx, db.New(tx), cmd.Tenant, classes)
		return err
	})
	if err != nil {
		return TenantPriorityClassesResult{}, fmt.Errorf("tenants.priority-classes.set %s: %w", cmd.Tenant, err)
	}
	return res, nil
}

func setTenantPriorityClasses(ctx context.Context, q *db.Queries, tenant string, classes []string) (TenantPriorityClassesResult, error) {
	// The tenant row serialises changes of its set (NO KEY UPDATE: the
	// foreign keys of its reservations and tokens are not blocked).
	if err := q.TenantLock(ctx, tenant); err != nil {
		return TenantPriorityClassesResult{}, pg.Translate(err, "tenant "+tenant)
	}
	cur, err := q.TenantPriorityClassesGet(ctx, tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return TenantPriorityClassesResult{}, unknownTenant(tenant)
	}
	if err != nil {
		return TenantPriorityClassesResult{}, pg.Translate(err, "tenant "+tenant)
	}
	existing, err := q.PriorityClassNamesExisting(ctx, classes)
	if err != nil {
		return TenantPriorityClassesResult{}, pg.Translate(err, "priority classes")
	}
	for _, c := range classes {
		if !slices.Contains(existing, c) {
			return TenantPriorityClassesResult{}, core.Errorf(core.CodeInvalidArgument, "priority class %s does not exist", c)
		}
	}
	if slices.Equal(cur.Classes, classes) {
		return tenantPriorityClassesOf(cur), nil // nothing changes: no event
	}
	version, err := q.TenantPriorityClassSetBump(ctx, db.TenantPriorityClassSetBumpParams{TenantID: tenant, Version: cur.Version})
	if errors.Is(err, pgx.ErrNoRows) {
		return TenantPriorityClassesResult{}, zeroRowsConflict(0, nil, "the priority classes of tenant "+tenant)
	}
	if err != nil {
		return TenantPriorityClassesResult{}, pg.Translate(err, "tenant "+tenant)
	}
	if err := q.TenantPriorityClassesClear(ctx, tenant); err != nil {
		return TenantPriorityClassesResult{}, pg.Translate(err, "tenant "+tenant)
	}
	if err := q.TenantPriorityClassesAdd(ctx, db.TenantPriorityClassesAddParams{TenantID: tenant, Classes: classes}); err != nil {
		return TenantPriorityClassesResult{}, pg.Translate(err, "priority classes")
	}
	out := tenantPriorityClassesOf(db.TenantPriorityClassesGetRow{TenantID: tenant, Version: version, Classes: classes,
		DefaultClass: cur.DefaultClass})
	out.Position, err = emit(ctx, q, core.EventTenantPriorityClassesSet, tenant, core.TenantPriorityClassesSubject(tenant),
		core.TenantPriorityClassesEventData{Tenant: tenant, Classes: out.Classes, Version: version})
	return out, err
}
