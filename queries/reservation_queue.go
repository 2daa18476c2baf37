package queries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
)

// ReservationQueue is where a pending reservation stands in the waiting
// line of its pool or site (docs/concepts/fair-share.md), as the line's
// last run ranked it, and why it waits.
type ReservationQueue struct {
	// Scope is the line: "pool:<id>" or "site:<id>".
	Scope string `json:"scope"`
	// Position is its place in the line (1 is tried first) and Queued how
	// many waited in it, at AsOf; both 0 until the line first ranked it
	// (at most the pending retry interval after it became pending).
	Position int32 `json:"position"`
	Queued   int32 `json:"queued"`
	// TenantUsageGPUHours and TenantShare are what its tenant was ranked
	// by at AsOf: the decayed GPU usage and the share; both 0 until the
	// line first ranked it (no share is 0).
	TenantUsageGPUHours float64 `json:"tenantUsageGpuHours"`
	TenantShare         int32   `json:"tenantShare"`
	// AsOf is when the line was ranked; absent until it first was.
	AsOf *time.Time `json:"asOf,omitempty"`
	// tenantSuspended: the line's runs skip it (its tenant is suspended),
	// which place says.
	tenantSuspended bool
	// Reason is why it was not placed at its last try: the message of its
	// Unschedulable condition.
	Reason string `json:"reason"`
}

// reservationQueue fills in d.Queue for a pending reservation: its scope
// and reason from the reservation, its place from pending_queue_positions,
// which the line's runs write (derived state, read from the primary like
// the rest of the detail). A reservation that is not pending has none.
func (s *Service) reservationQueue(ctx context.Context, d *ReservationDetail) error {
	if d.State != core.ReservationPending {
		return nil
	}
	qu := &ReservationQueue{Scope: core.QueueScope(d.PoolID, d.SiteID)}
	for _, c := range d.Conditions {
		if c.Type == core.ConditionUnschedulable {
			qu.Reason = c.Message
		}
	}
	p, err := s.q().PendingQueuePositionGet(ctx, d.ID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return wrap(err, "queue position of reservation "+d.ID)
	default:
		qu.tenantSuspended = p.TenantSuspended
		if p.Scope != nil { // ranked
			at := p.ComputedAt.UTC()
			qu.Scope, qu.Position, qu.Queued, qu.AsOf = *p.Scope, *p.Position, *p.Queued, &at
			qu.TenantUsageGPUHours, qu.TenantShare = *p.TenantUsage, *p.TenantShare
		}
	}
	d.Queue = qu
	// The "why pending" condition says it too, for readers of the
	// conditions alone (the console's "Why it is pending", webhooks' view).
	for i, c := range d.Conditions {
		if c.Type == core.ConditionUnschedulable && c.Status {
			d.Conditions[i].Message = c.Message + "; " + qu.place()
		}
	}
	return nil
}

// place says where in its line the reservation stands, in words, and
// that it is not tried while its tenant is suspended.
func (qu *ReservationQueue) place() string {
	var place string
	if qu.Position == 0 {
		place = "not ranked in the line of " + qu.Scope + " yet (it runs every 30 s)"
	} else {
		place = fmt.Sprintf("place in line: %d of %d in %s (its tenant's decayed usage %.3f GPU-hours, share %d)",
			qu.Position, qu.Queued, qu.Scope, qu.TenantUsageGPUHours, qu.TenantShare)
	}
	if qu.tenantSuspended {
		place += "; its tenant is suspended: it keeps its place but is not placed until an operator resumes the tenant"
	}
	return place
}
