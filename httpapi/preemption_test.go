package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// Over HTTP, as real clients see it: globex fills the node with batch
// reservations (preemptible, -100); acme's prod create (1000) answers 201
// booked; globex reads its displaced reservation as preempted, with the
// Preempted condition; acme cannot see globex's reservation at all.
func TestPreemptionOverHTTP(t *testing.T) {
	t.Parallel()
	s := setupClasses(t)
	op := s.operator
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/priority-classes", op,
		`{"name":"batch","value":-100,"preemptible":true,"graceSeconds":5}`, nil)
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/priority-classes", op, `{"name":"prod","value":1000}`, nil)
	_, globex := s.tokenFor(t, "globex", "hank@globex", core.RoleMember)
	for res, max := range map[string]int{"gpu": 2, "vcpu": 64, "memory": 65536, "disk": 500} {
		s.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/globex/quotas/"+res, op, map[string]int{"max": max}, nil)
	}
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/globex/priority-classes", op, `{"classes":["batch"]}`, nil)
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/priority-classes", op, `{"classes":["prod"]}`, nil)

	batch := s.reservationBody(t, 1)
	batch["priorityClass"] = "batch"
	var victims [2]reservationJSON
	for i := range victims {
		s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", globex, batch, nil).decode(t, &victims[i])
		require.Equal(t, "booked", victims[i].State)
	}
	// acme may not name batch; globex may not name prod.
	s.fails(t, http.StatusForbidden, core.CodePermissionDenied, http.MethodPost, "/v1/reservations", s.member, batch, nil)
	prod := s.reservationBody(t, 1)
	prod["priorityClass"] = "prod"
	s.fails(t, http.StatusForbidden, core.CodePermissionDenied, http.MethodPost, "/v1/reservations", globex, prod, nil)

	var pre reservationJSON
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", s.member, prod, nil).decode(t, &pre)
	require.Equal(t, "booked", pre.State)
	var victim reservationJSON
	for _, v := range victims {
		if v.DeviceIDs[0] == pre.DeviceIDs[0] {
			victim = v
		}
	}
	require.NotEmpty(t, victim.ID, "the preemptor has a victim's GPU")

	s.catchUp(t, pre.Position)
	var got reservationJSON
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations/"+victim.ID+"?minPosition="+pre.Position, globex, nil, nil).decode(t, &got)
	require.Equal(t, "preempted", got.State)
	require.Len(t, got.Conditions, 1)
	require.Equal(t, core.ConditionPreempted, got.Conditions[0].Type)
	require.Contains(t, got.Conditions[0].Message, pre.ID)
	s.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodGet, "/v1/reservations/"+victim.ID, s.member, nil, nil)
	// The device-holders read model: later in the window the GPU is the
	// preemptor's alone (the victim's hold ended at its preemption).
	var holders struct {
		Holders []struct {
			ReservationID string `json:"reservationId"`
		} `json:"holders"`
	}
	at := s.pg.Now(t).Add(30 * time.Minute).Format(time.RFC3339)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/devices/"+pre.DeviceIDs[0]+"/holders?at="+at+"&minPosition="+pre.Position,
		op, nil, nil).decode(t, &holders)
	require.Len(t, holders.Holders, 1)
	require.Equal(t, pre.ID, holders.Holders[0].ReservationID)
	// The victim's GPU quota came back: globex may book again (and goes
	// pending: the node is full).
	var again reservationJSON
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", globex, batch, nil).decode(t, &again)
	require.Equal(t, "pending", again.State)
}
