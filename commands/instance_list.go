package commands

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// Page sizes of ListInstances: the default, and the most a caller may ask
// for.
const (
	DefaultInstancePage = 50
	MaxInstancePage     = 500
)

// InstancePage is one page of a reservation's instances; NextAfter is the
// key of the next page ("" on the last), which the API wraps into an opaque
// cursor.
type InstancePage struct {
	Items     []core.Instance
	NextAfter string
}

// ListInstances pages through a reservation's instances, oldest first,
// after the instance id after ("" for the first page), limit at a time (0:
// DefaultInstancePage). Like GetInstance it reads the instances as the
// commands left them. Another tenant's reservation is NOT_FOUND, as a
// missing one is.
func (h *Handlers) ListInstances(ctx context.Context, actor core.Actor, reservationID, after string, limit int) (InstancePage, error) {
	switch {
	case reservationID == "":
		return InstancePage{}, core.Errorf(core.CodeInvalidArgument, "reservationId is required")
	case limit < 0 || limit > MaxInstancePage:
		return InstancePage{}, core.Errorf(core.CodeInvalidArgument, "limit must be from 1 to %d", MaxInstancePage)
	case limit == 0:
		limit = DefaultInstancePage
	}
	q := db.New(h.Pool)
	r, err := q.ReservationGet(ctx, reservationID)
	if err == nil && !actor.Sees(r.TenantID) {
		err = pgx.ErrNoRows // another tenant's: the very answer a missing one gets
	}
	if err != nil {
		return InstancePage{}, pg.Translate(err, "reservation "+reservationID)
	}
	rows, err := q.InstanceListOfReservation(ctx, db.InstanceListOfReservationParams{ReservationID: reservationID,
		AfterID: after, MaxRows: int32(limit + 1)})
	if err != nil {
		return InstancePage{}, fmt.Errorf("list instances of %s: %w", reservationID, pg.Translate(err, "instances"))
	}
	page := InstancePage{Items: make([]core.Instance, 0, min(len(rows), limit))}
	for i, row := range rows {
		if i == limit {
			page.NextAfter = rows[i-1].ID
			break
		}
		in, err := instanceView(row)
		if err != nil {
			return InstancePage{}, err
		}
		page.Items = append(page.Items, in)
	}
	return page, nil
}
