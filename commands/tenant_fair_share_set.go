package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// SetTenantFairShare sets a tenant's share of the waiting line
// (docs/concepts/fair-share.md): the tenant's decayed usage is divided by
// it, so a tenant with share 2 may use twice what a tenant with share 1
// uses and still be served as early.
type SetTenantFairShare struct {
	Tenant string `json:"tenant"`
	Share  int64  `json:"share"`
}

// TenantFairShareResult is a tenant's share after the change, its version
// (0 while it was never set) and the position of the event written (zero
// when nothing changed).
type TenantFairShareResult struct {
	Tenant   string          `json:"tenant"`
	Share    int32           `json:"share"`
	Version  int64           `json:"version"`
	Position outbox.Position `json:"position"`
}

// SetTenantFairShare runs tenants.set_fair_share (operator only). The
// share is 1 to 1,000,000 (INVALID_ARGUMENT), the tenant id follows the
// rule of tokens.create (INVALID_ARGUMENT) and the tenant must exist
// (NOT_FOUND). It locks the tenant row, writes the share at the next
// version and appends tenant.fair_share_set, in one transaction. The share
// the tenant already has (1 for one never set) writes nothing and appends
// no event. The next run of each line ranks by the new share; nothing
// already placed moves.
func (h *Handlers) SetTenantFairShare(ctx context.Context, actor core.Actor, cmd SetTenantFairShare) (TenantFairShareResult, error) {
	if err := requireOperator(actor, "tenants.set_fair_share"); err != nil {
		return TenantFairShareResult{}, err
	}
	if !tokenTenantPattern.MatchString(cmd.Tenant) {
		return TenantFairShareResult{}, core.Errorf(core.CodeInvalidArgument,
			"tenant %q is invalid: use 1 to 63 lower-case letters, digits or '-', starting with a letter or digit", cmd.Tenant)
	}
	if cmd.Share < core.MinFairShare || cmd.Share > core.MaxFairShare {
		return TenantFairShareResult{}, core.Errorf(core.CodeInvalidArgument, "share %d is out of range: it is %d to %d",
			cmd.Share, core.MinFairShare, core.MaxFairShare)
	}
	var res TenantFairShareResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		var err error
		res, err = setTenantFairShare(ctx, db.New(tx), cmd.Tenant, int32(cmd.Share))
		return err
	})
	if err != nil {
		return TenantFairShareResult{}, fmt.Errorf("tenants.set_fair_share %s: %w", cmd.Tenant, err)
	}
	return res, nil
}

func setTenantFairShare(ctx context.Context, q *db.Queries, tenant string, share int32) (TenantFairShareResult, error) {
	// The tenant row serialises changes of its share (NO KEY UPDATE: the
	// foreign keys of its reservations and tokens are not blocked).
	if err := q.TenantLock(ctx, tenant); err != nil {
		return TenantFairShareResult{}, pg.Translate(err, "tenant "+tenant)
	}
	cur, err := q.TenantFairShareCurrent(ctx, tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return TenantFairShareResult{}, unknownTenant(tenant)
	}
	if err != nil {
		return TenantFairShareResult{}, pg.Translate(err, "tenant "+tenant)
	}
	if cur.Share == share {
		return TenantFairShareResult{Tenant: tenant, Share: share, Version: cur.Version}, nil // nothing changes: no event
	}
	version, err := q.TenantFairShareSet(ctx, db.TenantFairShareSetParams{TenantID: tenant, Share: share, Version: cur.Version})
	if errors.Is(err, pgx.ErrNoRows) {
		return TenantFairShareResult{}, zeroRowsConflict(0, nil, "the fair share of tenant "+tenant)
	}
	if err != nil {
		return TenantFairShareResult{}, pg.Translate(err, "tenant "+tenant)
	}
	out := TenantFairShareResult{Tenant: tenant, Share: share, Version: version}
	out.Position, err = emit(ctx, q, core.EventTenantFairShareSet, tenant, core.TenantFairShareSubject(tenant),
		core.TenantFairShareEventData{Tenant: tenant, Share: share, Version: version})
	return out, err
}
