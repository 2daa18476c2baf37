package commands

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// checkPendingCap refuses, with QUOTA_EXCEEDED, a create that would leave
// the tenant more than maxPendingReservations pending reservations. It
// sends b first, in the same round trip: what placement left queued (the
// rollback of a failed attempt's savepoint, which would take a lock taken
// inside it along), then the lock, then the count.
//
// Quota bounds what a tenant's pending reservations ask for, not how many
// there are: one asking for a megabyte of memory in a pool where nothing
// fits waits like any other. Every run of a pool's or site's waiting line
// ranks all its pending reservations and writes each one's place, so one
// tenant's 100,000 of them made every run of that line take 1.9 s, every
// other tenant's reservations there waiting behind it. The count is taken
// under a transaction-scoped lock of the tenant's pending creates (a
// statement after the lock's, so its snapshot sees every create that held
// the lock before), so that concurrent creates cannot pass it together;
// creates that book are not counted and never take the lock.
func (h *Handlers) checkPendingCap(ctx context.Context, tx pgx.Tx, b *pg.Batch, tenant string) error {
	limit := h.maxPendingReservations()
	pg.Exec(ctx, b, (*db.Queries).ReservationLockTenantPending, tenant)
	var n int32
	pg.One(ctx, b, (*db.Queries).ReservationCountPendingOfTenant, db.ReservationCountPendingOfTenantParams{
		TenantID: tenant, MaxRows: int32(limit)}, &n, nil)
	if err := b.Send(ctx, tx); err != nil {
		return pg.Translate(err, "tenant "+tenant)
	}
	if int(n) >= limit {
		return core.Errorf(core.CodeQuotaExceeded,
			"tenant %s has %d pending reservations, the most it may have waiting: cancel one, or wait for one to be placed",
			tenant, limit)
	}
	return nil
}
