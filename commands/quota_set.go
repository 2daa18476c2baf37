package commands

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// SetQuota sets a tenant's maximum for one resource: gpu, gpu:<model>
// (any model a GPU can have, spaces included: core.ValidQuotaResource),
// vcpu, memory (MB) or disk (GB). A tenant has no quota, and so can reserve
// nothing, for a resource until one is set; gpu:<model> quotas are optional
// and charged only when set. IfVersion, when non-zero, applies the change
// only to a quota at that version (If-Match; CONFLICT otherwise): PUT
// takes an absolute max, so two operators raising one limit at once
// would otherwise lose one of the raises without a word.
type SetQuota struct {
	Tenant    string
	Resource  string
	Max       int64
	IfVersion int64 // 0: no version check, the last writer wins
}

// QuotaResult is a quota after the change.
type QuotaResult struct {
	Tenant   string          `json:"tenant"`
	Resource string          `json:"resource"`
	Used     int64           `json:"used"`
	Max      int64           `json:"max"`
	Version  int64           `json:"version"`
	Position outbox.Position `json:"position"`
}

// unknownTenant is the answer for a quota of a tenant that does not exist.
// SetQuota does not create tenants: an operator creates one by issuing it a
// token (tokens.create), so a typo in the tenant id cannot mint a tenant.
func unknownTenant(tenant string) error {
	return core.Errorf(core.CodeNotFound, "tenant %s not found: create it by issuing it a token", tenant)
}

// checkModelSpelling refuses a gpu:<model> quota whose model no device has
// exactly while some device's model differs from it only in case, spaces or
// punctuation (gpu:h100-80gb when the inventory says H100-80GB). Placement
// charges a model quota only for the exact model of the atoms it books, so
// such a quota would be accepted and limit nothing: the tenant could book
// every H100 while the operator believes it holds two. The answer names the
// inventory's spelling. A model no device names alike is still accepted, so
// that a quota can come before its hardware.
func checkModelSpelling(ctx context.Context, q *db.Queries, resource string) error {
	model, ok := strings.CutPrefix(resource, core.GPUModelQuota(""))
	if !ok {
		return nil
	}
	alike, err := q.DeviceModelsNamedAlike(ctx, model)
	if err != nil {
		return pg.Translate(err, "devices")
	}
	if !misspelledModel(model, alike) {
		return nil
	}
	names := make([]string, len(alike))
	for i, m := range alike {
		names[i] = core.GPUModelQuota(m)
	}
	return core.Errorf(core.CodeInvalidArgument,
		"no GPU's model is %q, which a model quota must match exactly, case included: the fleet's is %s",
		model, strings.Join(names, " or "))
}

// misspelledModel reports whether model is spelled unlike the fleet's: no
// device has it exactly, and some have a model that DeviceModelsNamedAlike
// found alike (alike).
func misspelledModel(model string, alike []string) bool {
	return len(alike) > 0 && !slices.Contains(alike, model)
}

// SetQuota runs quotas.set (operator only). The tenant id follows the rule
// of tokens.create (INVALID_ARGUMENT otherwise) and must exist (NOT_FOUND). Lowering max below what the
// tenant already uses is refused with CONFLICT, naming the usage: quota_usage
// keeps used <= max as a CHECK, and silently over-quota tenants would make
// that invariant meaningless. Shrink a tenant by releasing reservations
// first, then lowering the quota. The max the quota already has writes
// nothing and appends no event; the result then carries the quota as it is
// with a zero position. With IfVersion the version is compared in the
// guarded statement (QuotaUsageSetMax), on the locked row, and checked
// before the other rules: a quota at another version, or one not set at
// all, is CONFLICT and nothing changes.
func (h *Handlers) SetQuota(ctx context.Context, actor core.Actor, cmd SetQuota) (QuotaResult, error) {
	if err := requireOperator(actor, "quotas.set"); err != nil {
		return QuotaResult{}, err
	}
	if !tokenTenantPattern.MatchString(cmd.Tenant) {
		// The rule tokens.create applies: a tenant id no token could carry.
		return QuotaResult{}, core.Errorf(core.CodeInvalidArgument,
			"tenant %q is invalid: use 1 to 63 lower-case letters, digits or '-', starting with a letter or digit", cmd.Tenant)
	}
	if err := core.ValidQuotaResource(cmd.Resource); err != nil {
		return QuotaResult{}, err
	}
	if cmd.Max < 0 {
		return QuotaResult{}, core.Errorf(core.CodeInvalidArgument, "quota max cannot be negative")
	}
	if cmd.IfVersion < 0 {
		return QuotaResult{}, core.Errorf(core.CodeInvalidArgument, "quota ifVersion cannot be negative")
	}
	var res QuotaResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		if _, err := q.TenantGet(ctx, cmd.Tenant); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return unknownTenant(cmd.Tenant)
			}
			return pg.Translate(err, "tenant")
		}
		if err := checkModelSpelling(ctx, q, cmd.Resource); err != nil {
			return err
		}
		rows, err := q.QuotaUsageSetMax(ctx, db.QuotaUsageSetMaxParams{TenantID: cmd.Tenant, Resource: cmd.Resource,
			Max: cmd.Max, IfVersion: cmd.IfVersion})
		if err != nil {
			if err = pg.Translate(err, "quota"); core.CodeOf(err) == core.CodeNotFound {
				return unknownTenant(cmd.Tenant) // never the foreign key's SQL detail
			}
			return err
		}
		if len(rows) == 0 {
			var err error
			res, err = quotaUnchanged(ctx, q, cmd)
			return err
		}
		r := rows[0]
		res = QuotaResult{Tenant: r.TenantID, Resource: r.Resource, Used: r.Used, Max: r.Max, Version: r.Version}
		res.Position, err = emit(ctx, q, core.EventQuotaSet, r.TenantID, core.QuotaSubject(r.TenantID, r.Resource),
			core.QuotaEventData{Tenant: r.TenantID, Resource: r.Resource, Max: r.Max, Version: r.Version})
		return err
	})
	if err != nil {
		return QuotaResult{}, fmt.Errorf("quotas.set %s %s: %w", cmd.Tenant, cmd.Resource, err)
	}
	return res, nil
}

// quotaUnchanged says why QuotaUsageSetMax changed nothing, from the row
// as it is now: another version than If-Match names (CONFLICT), the max
// it already has (a no-op: the quota as it is), or a max below the usage
// (CONFLICT). Without If-Match ON CONFLICT has locked the row even though
// its guard failed; with one the statement may have inserted nothing
// without touching the row (its snapshot did not see it), so the row is
// read FOR UPDATE: either way the read is the state the answer is about.
func quotaUnchanged(ctx context.Context, q *db.Queries, cmd SetQuota) (QuotaResult, error) {
	what := fmt.Sprintf("quota %s of tenant %s", cmd.Resource, cmd.Tenant)
	cur, err := q.QuotaUsageGetForUpdate(ctx, db.QuotaUsageGetForUpdateParams{TenantID: cmd.Tenant, Resource: cmd.Resource})
	if errors.Is(err, pgx.ErrNoRows) && cmd.IfVersion != 0 {
		return QuotaResult{}, core.Errorf(core.CodeConflict,
			"%s is not set, so it is at no version, not %d: set it without If-Match", what, cmd.IfVersion)
	}
	if err != nil {
		return QuotaResult{}, pg.Translate(err, "quota")
	}
	if err := checkVersion(cmd.IfVersion, cur.Version, what); err != nil {
		return QuotaResult{}, err
	}
	if cur.Max == cmd.Max { // nothing changes: no version, no event
		return QuotaResult{Tenant: cur.TenantID, Resource: cur.Resource, Used: cur.Used, Max: cur.Max, Version: cur.Version}, nil
	}
	if cur.Used > cmd.Max {
		return QuotaResult{}, core.Errorf(core.CodeConflict, "tenant %s uses %d %s; release reservations before lowering its quota to %d",
			cmd.Tenant, cur.Used, cmd.Resource, cmd.Max)
	}
	// The statement saw the quota before a writer that has committed since
	// (a quota set for the first time, at the version If-Match names, while
	// this one ran): the change was not made, and the caller decides again.
	return QuotaResult{}, zeroRowsConflict(0, nil, what)
}
