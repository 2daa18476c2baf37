package commands

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg"
)

// CancelReservation withdraws a pending reservation; a booked one is
// released instead (the state table says so with CONFLICT).
type CancelReservation struct {
	ReservationID string
	IfVersion     int64 // 0: no version check
}

// CancelReservation runs reservations.cancel: refunds the quota a pending
// reservation holds and moves it to cancelled.
func (h *Handlers) CancelReservation(ctx context.Context, actor core.Actor, cmd CancelReservation) (ReservationResult, error) {
	if !actor.CanWrite() {
		return ReservationResult{}, core.Errorf(core.CodePermissionDenied, "reservations.cancel requires a member or operator role")
	}
	var res ReservationResult
	err := retryUnversioned(cmd.IfVersion, func() error {
		return pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
			var err error
			res, err = endReservation(ctx, tx, actor, cmd.ReservationID, cmd.IfVersion,
				core.ReservationCancelled, core.EventReservationCancelled)
			return err
		})
	})
	if err != nil {
		return ReservationResult{}, fmt.Errorf("reservations.cancel %s: %w", cmd.ReservationID, err)
	}
	return res, nil
}
