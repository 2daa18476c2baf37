package queries

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

// Reservation is a reservation as the read side shows it.
type Reservation struct {
	ID          string           `json:"id"`
	Tenant      string           `json:"tenant"`
	State       core.State       `json:"state"`
	PoolID      string           `json:"poolId,omitempty"`
	SiteID      string           `json:"siteId,omitempty"`
	NodeID      string           `json:"nodeId,omitempty"`
	DeviceIDs   []string         `json:"deviceIds"`
	Start       time.Time        `json:"start"`
	End         time.Time        `json:"end"`
	Tolerations []string         `json:"tolerations"`
	Conditions  []core.Condition `json:"conditions"`
	Version     int64            `json:"version"`
	CreatedAt   time.Time        `json:"createdAt"`
	UpdatedAt   time.Time        `json:"updatedAt"`
	// Position is where the last event applied to it sits in the log.
	Position string `json:"position"`
	// Spec is what was asked for: GPUs (count, kind, model, MIG profile or
	// slot kind), vCPU, memory (MB), disk (GB) and tolerations.
	Spec core.ReservationSpec `json:"spec"`

	// PriorityClass is its priority class; Priority and Preemptible are
	// the class's value and flag, copied when it was created.
	PriorityClass string `json:"priorityClass"`
	Priority      int32  `json:"priority"`
	Preemptible   bool   `json:"preemptible"`
}

func reservationOf(r db.RmReservation) (Reservation, error) {
	out := Reservation{ID: r.ID, Tenant: r.TenantID, State: core.State(r.State), DeviceIDs: r.DeviceIds,
		Start: r.StartTs.UTC(), End: r.EndTs.UTC(), Tolerations: r.Tolerations, Version: r.Version,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		Position: outbox.Position{TxID: r.UpdatedTxid, Seq: r.UpdatedSeq}.String()}
	out.PoolID, out.SiteID, out.NodeID = deref(r.PoolID), deref(r.SiteID), deref(r.NodeID)
	out.PriorityClass, out.Priority, out.Preemptible = r.PriorityClass, r.Priority, r.Preemptible
	if err := json.Unmarshal(r.Conditions, &out.Conditions); err != nil {
		return out, wrap(err, "decode conditions of reservation "+r.ID)
	}
	if err := decodeSpec(r.Spec, &out.Spec); err != nil {
		return out, wrap(err, "decode spec of reservation "+r.ID)
	}
	return out, nil
}

// decodeSpec decodes a stored request into spec as the API shows it: no
// GPU kind when no GPU was asked for (the write model stores gpu), and
// tolerations a list, never null.
func decodeSpec(raw []byte, spec *core.ReservationSpec) error {
	*spec = core.ReservationSpec{}
	if err := json.Unmarshal(raw, spec); err != nil {
		return err
	}
	if spec.GPU.Count == 0 {
		spec.GPU.Kind = ""
	}
	if spec.Tolerations == nil {
		spec.Tolerations = []string{}
	}
	return nil
}

// GetReservation reads one reservation with its detail (see
// ReservationDetail). Another tenant's reservation is NOT_FOUND, never a
// hint that it exists.
func (s *Service) GetReservation(ctx context.Context, actor core.Actor, id string, min outbox.Position) (ReservationDetail, error) {
	q, err := s.readModel(ctx, min, projections.NameReservations)
	if err != nil {
		return ReservationDetail{}, err
	}
	r, err := q.RmReservationGet(ctx, id)
	if err != nil {
		return ReservationDetail{}, wrap(err, "reservation "+id)
	}
	if !actor.Sees(r.TenantID) {
		return ReservationDetail{}, core.Errorf(core.CodeNotFound, "reservation %s not found", id)
	}
	out := ReservationDetail{Charges: map[string]int64{}}
	if out.Reservation, err = reservationOf(r); err != nil {
		return ReservationDetail{}, err
	}
	if err := s.reservationDetail(ctx, &out); err != nil {
		return ReservationDetail{}, err
	}
	return out, s.reservationQueue(ctx, &out)
}

// ListReservations filters a list of reservations.
type ListReservations struct {
	Cursor string
	Limit  int
	// State keeps only reservations in that state.
	State string
	// Tenant narrows an operator's list to one tenant; others always see
	// only their own.
	Tenant      string
	MinPosition outbox.Position
}

// ListReservations pages through the reservations the actor may see, in
// creation order (a reservation created while paging shows up on a later
// page, never in a gap). It returns one page and the cursor of the next,
// "" on the last.
func (s *Service) ListReservations(ctx context.Context, actor core.Actor, l ListReservations) (items []Reservation, nextCursor string, err error) {
	limit, err := limitOf(l.Limit)
	if err != nil {
		return nil, "", err
	}
	after, err := DecodeCursor("rsv", l.Cursor, 1)
	if err != nil {
		return nil, "", err
	}
	var from outbox.Position
	if after != nil {
		if from, err = outbox.ParsePosition(after[0]); err != nil {
			return nil, "", core.Errorf(core.CodeInvalidArgument, "malformed cursor %q", core.Clip(l.Cursor, 64))
		}
	}
	if l.State != "" && !validState(core.State(l.State)) {
		return nil, "", core.Errorf(core.CodeInvalidArgument, "unknown reservation state %q", core.Clip(l.State, 64))
	}
	q, err := s.readModel(ctx, l.MinPosition, projections.NameReservations)
	if err != nil {
		return nil, "", err
	}
	rows, err := listReservations(ctx, q, tenantFilter(actor, l.Tenant), l.State, from, int32(limit+1))
	if err != nil {
		return nil, "", wrap(err, "reservations")
	}
	items = []Reservation{}
	for i, r := range rows {
		if i == limit {
			last := rows[limit-1]
			nextCursor = EncodeCursor("rsv", outbox.Position{TxID: last.CreatedTxid, Seq: last.CreatedSeq}.String())
			break
		}
		v, err := reservationOf(r)
		if err != nil {
			return nil, "", err
		}
		items = append(items, v)
	}
	return items, nextCursor, nil
}

// listReservations reads one page of the read model: one tenant's (state
// "" for every state) or every tenant's (tenant nil), through statements
// whose every plan reads the page from its own index, whatever the other
// tenants hold and whichever pages a pooled connection planned before.
func listReservations(ctx context.Context, q *db.Queries, tenant *string, state string, from outbox.Position, rows int32) ([]db.RmReservation, error) {
	switch {
	case tenant != nil && state != "":
		return q.RmReservationListOfTenantInState(ctx, db.RmReservationListOfTenantInStateParams{TenantID: *tenant,
			State: state, AfterTxid: from.TxID, AfterSeq: from.Seq, MaxRows: rows})
	case tenant != nil:
		return q.RmReservationListOfTenant(ctx, db.RmReservationListOfTenantParams{TenantID: *tenant,
			AfterTxid: from.TxID, AfterSeq: from.Seq, MaxRows: rows})
	case state != "":
		return q.RmReservationListInState(ctx, db.RmReservationListInStateParams{State: state,
			AfterTxid: from.TxID, AfterSeq: from.Seq, MaxRows: rows})
	}
	return q.RmReservationList(ctx, db.RmReservationListParams{AfterTxid: from.TxID, AfterSeq: from.Seq, MaxRows: rows})
}

func validState(s core.State) bool {
	for _, st := range core.ReservationStateTable().States {
		if st == s {
			return true
		}
	}
	return false
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
