package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

// A suspended tenant's pending reservation is not placed when capacity
// frees: it keeps its place, ahead of another tenant's that the line
// places meanwhile, and is placed once the tenant is resumed. Everything
// but the worker's run of the line goes over HTTP.
func TestTenantSuspensionHoldsPendingReservationsOverHTTP(t *testing.T) {
	t.Parallel()
	s := setupClasses(t) // n1: two GPUs in fra1-gpu; acme may hold 2
	_, globex := s.tokenFor(t, "globex", "carol@globex", core.RoleMember)
	for res, max := range map[string]int{"gpu": 4, "vcpu": 64, "memory": 65536, "disk": 500} {
		s.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/globex/quotas/"+res, s.operator, map[string]int{"max": max}, nil)
	}
	create := func(token string, gpus int, want string) reservationJSON {
		t.Helper()
		var r reservationJSON
		s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", token, s.reservationBody(t, gpus), nil).decode(t, &r)
		require.Equal(t, want, r.State)
		return r
	}
	hog := create(globex, 2, "booked") // n1 is full
	held := create(s.member, 1, "pending")
	behind := create(globex, 1, "pending")

	state := func(id string) string {
		t.Helper()
		var st string
		require.NoError(t, s.pg.Pool.QueryRow(context.Background(), "SELECT state FROM reservations WHERE id = $1", id).Scan(&st))
		return st
	}
	h := commands.New(s.pg.Pool, commands.Config{})
	line := commands.PendingQueueKey("fra1-gpu", "")
	runLine := func() {
		t.Helper()
		s.pg.AdvanceSimClock(t, commands.DefaultPendingRetryInterval)
		_, err := commandstest.RunQueue(context.Background(), h, line)
		require.NoError(t, err)
	}

	s.ok(t, http.StatusOK, http.MethodPost, "/v1/tenants/acme/suspend", s.operator,
		map[string]any{"reason": "abuse report 4411"}, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/reservations/"+hog.ID+"/release", globex, nil, nil)
	runLine()
	require.Equal(t, "pending", state(held.ID), "a suspended tenant is handed no GPU")
	require.Equal(t, "booked", state(behind.ID), "the reservation behind it is not stalled")
	var position, queued int
	require.NoError(t, s.pg.Pool.QueryRow(context.Background(),
		"SELECT position, queued FROM pending_queue_positions WHERE reservation_id = $1", held.ID).Scan(&position, &queued))
	require.Equal(t, []int{1, 2}, []int{position, queued}, "it kept its place, first of the two (acme had used nothing)")
	runLine()
	require.Equal(t, "pending", state(held.ID), "nor at the next run")
	whyPending := func() string {
		t.Helper()
		s.catchUp(t, held.Position)
		var d struct {
			Conditions []core.Condition `json:"conditions"`
		}
		s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations/"+held.ID+"?minPosition="+held.Position, s.operator, nil, nil).decode(t, &d)
		require.Len(t, d.Conditions, 1)
		return d.Conditions[0].Message
	}
	require.Contains(t, whyPending(), "its tenant is suspended", "the operator reads why it waits")

	s.ok(t, http.StatusOK, http.MethodPost, "/v1/tenants/acme/resume", s.operator, nil, nil)
	require.NotContains(t, whyPending(), "suspended")
	runLine()
	require.Equal(t, "booked", state(held.ID), "placed once the tenant is resumed")
}
