package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
)

// SuspendTenant suspends a tenant (docs/concepts/tenant-suspension.md):
// non-payment, abuse, an incident. Reason is shown to the tenant in every
// refusal. ReleaseReservations also ends each of its reservations that
// holds capacity or quota, the ordinary way (released, or cancelled while
// pending); without it they run until their end.
type SuspendTenant struct {
	Tenant              string
	Reason              string
	ReleaseReservations bool
}

// ResumeTenant lifts a tenant's suspension.
type ResumeTenant struct {
	Tenant string
}

// TenantSuspensionResult is a tenant's suspension after a suspend or a
// resume, the position of the event written (zero when nothing changed),
// the tokens whose access changed (what the process that ran the command
// applies to its cache at once; the authz feed brings it to the others)
// and the reservations a suspend released or cancelled.
type TenantSuspensionResult struct {
	Tenant      string
	Suspended   bool
	Reason      string
	SuspendedAt *time.Time
	Version     int64
	Position    outbox.Position
	TokenIDs    []string
	Released    []string
}

// SuspendTenant runs tenants.suspend (operator only). In one transaction
// it locks the tenant row FOR UPDATE (tenant_refuse_suspended waits for
// it: a create racing the suspend either committed before, or is refused),
// marks the tenant suspended, appends a suspended change to authz_changes
// for each of its valid tokens (every API process drops them and ends
// their event streams) and appends tenant.suspended. A tenant suspended
// already changes nothing and appends no event (its first reason stays);
// with ReleaseReservations its remaining reservations are still ended, so
// that a suspend cut short can be completed by running it again. The
// tenant that holds a valid operator token is refused (CONFLICT): nobody
// could resume it.
//
// The reservations are ended after the commit, each in its own
// transaction with its own event, as ReleaseReservation and
// CancelReservation end them, so that billing stops at each release.
func (h *Handlers) SuspendTenant(ctx context.Context, actor core.Actor, cmd SuspendTenant) (TenantSuspensionResult, error) {
	if err := requireOperator(actor, "tenants.suspend"); err != nil {
		return TenantSuspensionResult{}, err
	}
	if err := validTenantID(cmd.Tenant); err != nil {
		return TenantSuspensionResult{}, err
	}
	reason := strings.TrimSpace(cmd.Reason)
	switch {
	case reason == "":
		return TenantSuspensionResult{}, core.Errorf(core.CodeInvalidArgument, "reason is required: say why the tenant is suspended")
	case len(reason) > core.MaxSuspensionReasonBytes || !utf8.ValidString(reason) || strings.ContainsRune(reason, 0):
		return TenantSuspensionResult{}, core.Errorf(core.CodeInvalidArgument,
			"reason must be UTF-8 text of at most %d bytes", core.MaxSuspensionReasonBytes)
	}
	var res TenantSuspensionResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		cur, err := lockTenantForSuspension(ctx, q, cmd.Tenant)
		if err != nil {
			return err
		}
		res = suspensionOf(cur)
		if cur.SuspendedAt != nil {
			return nil // suspended already: nothing changes, no event
		}
		ops, err := q.TenantOperatorTokenCount(ctx, cmd.Tenant)
		if err != nil {
			return pg.Translate(err, "tenant "+cmd.Tenant)
		}
		if ops > 0 {
			return core.Errorf(core.CodeConflict,
				"tenant %s holds %d valid operator token(s): the operators' own tenant cannot be suspended", cmd.Tenant, ops)
		}
		row, err := q.TenantSuspend(ctx, db.TenantSuspendParams{ID: cmd.Tenant, Reason: reason})
		if errors.Is(err, pgx.ErrNoRows) {
			return zeroRowsConflict(0, nil, "the suspension of tenant "+cmd.Tenant)
		}
		if err != nil {
			return pg.Translate(err, "tenant "+cmd.Tenant)
		}
		at := row.SuspendedAt
		res = TenantSuspensionResult{Tenant: cmd.Tenant, Suspended: true, Reason: reason, SuspendedAt: at, Version: row.SuspensionVersion}
		if res.TokenIDs, err = q.AuthzChangeAppendTenant(ctx, db.AuthzChangeAppendTenantParams{Change: "suspended", TenantID: cmd.Tenant}); err != nil {
			return pg.Translate(err, "tenant "+cmd.Tenant)
		}
		res.Position, err = emit(ctx, q, core.EventTenantSuspended, cmd.Tenant, core.TenantSubject(cmd.Tenant),
			core.TenantSuspensionEventData{Tenant: cmd.Tenant, Reason: reason, SuspendedAt: at,
				ReleaseReservations: cmd.ReleaseReservations, Version: row.SuspensionVersion})
		return err
	})
	if err != nil {
		return TenantSuspensionResult{}, fmt.Errorf("tenants.suspend %s: %w", cmd.Tenant, err)
	}
	if cmd.ReleaseReservations && res.Suspended {
		if res.Released, err = h.endTenantReservations(ctx, actor, cmd.Tenant); err != nil {
			return res, fmt.Errorf("tenants.suspend %s: the tenant is suspended; ending its reservations: %w", cmd.Tenant, err)
		}
	}
	return res, nil
}

// ResumeTenant runs tenants.resume (operator only): in one transaction it
// clears the suspension, appends a resumed change for each of the tenant's
// valid tokens, appends tenant.resumed and wakes the waiting lines that
// hold the tenant's pending reservations, which were skipped while it was
// suspended (pending_queue.go). Tokens that expired or were
// revoked meanwhile stay refused; reservations a suspend released stay
// released. A tenant that is not suspended changes nothing and appends no
// event.
func (h *Handlers) ResumeTenant(ctx context.Context, actor core.Actor, cmd ResumeTenant) (TenantSuspensionResult, error) {
	if err := requireOperator(actor, "tenants.resume"); err != nil {
		return TenantSuspensionResult{}, err
	}
	if err := validTenantID(cmd.Tenant); err != nil {
		return TenantSuspensionResult{}, err
	}
	var res TenantSuspensionResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		cur, err := lockTenantForSuspension(ctx, q, cmd.Tenant)
		if err != nil {
			return err
		}
		res = suspensionOf(cur)
		if cur.SuspendedAt == nil {
			return nil // not suspended: nothing changes, no event
		}
		version, err := q.TenantResume(ctx, cmd.Tenant)
		if errors.Is(err, pgx.ErrNoRows) {
			return zeroRowsConflict(0, nil, "the suspension of tenant "+cmd.Tenant)
		}
		if err != nil {
			return pg.Translate(err, "tenant "+cmd.Tenant)
		}
		res = TenantSuspensionResult{Tenant: cmd.Tenant, Version: version}
		if res.TokenIDs, err = q.AuthzChangeAppendTenant(ctx, db.AuthzChangeAppendTenantParams{Change: "resumed", TenantID: cmd.Tenant}); err != nil {
			return pg.Translate(err, "tenant "+cmd.Tenant)
		}
		res.Position, err = emit(ctx, q, core.EventTenantResumed, cmd.Tenant, core.TenantSubject(cmd.Tenant),
			core.TenantSuspensionEventData{Tenant: cmd.Tenant, Version: version})
		if err != nil {
			return err
		}
		return wakeTenantLines(ctx, q, cmd.Tenant)
	})
	if err != nil {
		return TenantSuspensionResult{}, fmt.Errorf("tenants.resume %s: %w", cmd.Tenant, err)
	}
	return res, nil
}

// TenantSuspension reads whether a tenant is suspended and why, without a
// lock: what an event stream that its tenant's suspension ended says.
func (h *Handlers) TenantSuspension(ctx context.Context, tenant string) (TenantSuspensionResult, error) {
	row, err := db.New(h.Pool).TenantSuspensionGet(ctx, tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return TenantSuspensionResult{}, unknownTenant(tenant)
	}
	if err != nil {
		return TenantSuspensionResult{}, pg.Translate(err, "tenant "+tenant)
	}
	return suspensionOf(db.TenantLockForSuspensionRow(row)), nil
}

// validTenantID refuses a tenant id that breaks the rule of tokens.create.
func validTenantID(tenant string) error {
	if !tokenTenantPattern.MatchString(tenant) {
		return core.Errorf(core.CodeInvalidArgument,
			"tenant %q is invalid: use 1 to 63 lower-case letters, digits or '-', starting with a letter or digit", core.Clip(tenant, 100))
	}
	return nil
}

// lockTenantForSuspension locks the tenant row (TenantLockForSuspension);
// an unknown tenant is NOT_FOUND.
func lockTenantForSuspension(ctx context.Context, q *db.Queries, tenant string) (db.TenantLockForSuspensionRow, error) {
	cur, err := q.TenantLockForSuspension(ctx, tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return cur, unknownTenant(tenant)
	}
	if err != nil {
		return cur, pg.Translate(err, "tenant "+tenant)
	}
	return cur, nil
}

func suspensionOf(r db.TenantLockForSuspensionRow) TenantSuspensionResult {
	out := TenantSuspensionResult{Tenant: r.ID, Suspended: r.SuspendedAt != nil, SuspendedAt: r.SuspendedAt, Version: r.SuspensionVersion}
	if r.SuspendedReason != nil {
		out.Reason = *r.SuspendedReason
	}
	return out
}

// endTenantReservations ends each reservation of the tenant that holds
// capacity or quota, as its own release (booked, active) or cancel
// (pending) would, each in its own transaction with its event. One that
// ended meanwhile (CONFLICT, NOT_FOUND) is skipped.
func (h *Handlers) endTenantReservations(ctx context.Context, actor core.Actor, tenant string) ([]string, error) {
	live, err := db.New(h.Pool).ReservationListLiveOfTenant(ctx, tenant)
	if err != nil {
		return nil, pg.Translate(err, "reservations of tenant "+tenant)
	}
	var ended []string
	for _, r := range live {
		if core.State(r.State) == core.ReservationPending {
			_, err = h.CancelReservation(ctx, actor, CancelReservation{ReservationID: r.ID})
		} else {
			_, err = h.ReleaseReservation(ctx, actor, ReleaseReservation{ReservationID: r.ID})
		}
		switch core.CodeOf(err) {
		case core.CodeConflict, core.CodeNotFound:
			continue // it ended, or moved on, meanwhile
		}
		if err != nil {
			return ended, err
		}
		ended = append(ended, r.ID)
	}
	return ended, nil
}

// wakeTenantLines wakes, now, each waiting line that holds one of the
// tenant's pending reservations: the runs while it was suspended skipped
// them, and a line left with nothing else to try stopped running. A line
// puts off a run that comes sooner than the retry interval after its last,
// so a resume places them within one interval.
func wakeTenantLines(ctx context.Context, q *db.Queries, tenant string) error {
	scopes, err := q.PendingQueueScopesOfTenant(ctx, tenant)
	if err != nil {
		return pg.Translate(err, "pending reservations of tenant "+tenant)
	}
	for _, s := range scopes {
		key := PendingQueueKey(derefString(s.PoolID), derefString(s.SiteID))
		if err := workqueue.Enqueue(ctx, q, KindReservationQueue, key, 0); err != nil {
			return fmt.Errorf("wake the line %s: %w", key, err)
		}
	}
	return nil
}
