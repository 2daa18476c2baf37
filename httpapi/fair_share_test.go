package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

type fairShareJSON struct {
	Tenant        string    `json:"tenant"`
	Share         int       `json:"share"`
	Version       int64     `json:"version"`
	Position      string    `json:"position"`
	UsageGPUHours *float64  `json:"usageGpuHours"`
	HalfLifeHours float64   `json:"halfLifeHours"`
	AsOf          time.Time `json:"asOf"`
}

// PUT /v1/tenants/{tenant}/fair-share is the operator's: a member is 403,
// a share out of range or missing 400, an unknown tenant 404, If-Match
// 400; the share a tenant has already writes nothing (position all zeros).
// GET answers the share, its version and the decayed usage to the
// operator for any tenant and to a tenant's own tokens, viewers included;
// another tenant is 404.
func TestFairShareOverHTTP(t *testing.T) {
	t.Parallel()
	s := setupClasses(t)
	op := s.operator
	const path = "/v1/tenants/acme/fair-share"

	var got fairShareJSON
	s.ok(t, http.StatusOK, http.MethodGet, path, s.member, nil, nil).decode(t, &got)
	require.Equal(t, "acme", got.Tenant)
	require.Equal(t, 1, got.Share, "a tenant nobody gave a share has 1")
	require.Zero(t, got.Version)
	require.NotNil(t, got.UsageGPUHours)
	require.Zero(t, *got.UsageGPUHours, "acme never held a GPU")
	require.Equal(t, 168.0, got.HalfLifeHours)
	require.True(t, got.AsOf.Equal(s.pg.Now(t)), "as of compute_now()")

	s.fails(t, http.StatusForbidden, core.CodePermissionDenied, http.MethodPut, path, s.member, `{"share":5}`, nil)
	for _, body := range []string{`{"share":0}`, `{"share":1000001}`, `{"share":-3}`, `{}`, `{"share":1.5}`, `{"share":"2"}`,
		`{"share":2,"extra":1}`} {
		s.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPut, path, op, body, nil)
	}
	s.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPut, path, op, `{"share":2}`, map[string]string{"If-Match": "1"})
	s.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodPut, "/v1/tenants/initech/fair-share", op, `{"share":2}`, nil)
	require.Zero(t, s.countRows(t, "SELECT count(*) FROM outbox WHERE type = $1", core.EventTenantFairShareSet))

	got = fairShareJSON{}
	s.ok(t, http.StatusOK, http.MethodPut, path, op, `{"share":1}`, nil).decode(t, &got)
	require.Equal(t, fairShareJSON{Tenant: "acme", Share: 1, Position: "00000000000000000000000000000000"}, got,
		"1 is the share acme has: nothing written")
	s.ok(t, http.StatusOK, http.MethodPut, path, op, `{"share":4}`, nil).decode(t, &got)
	require.Equal(t, 4, got.Share)
	require.Equal(t, int64(1), got.Version)
	require.Regexp(t, positionPattern, got.Position)
	require.NotEqual(t, "00000000000000000000000000000000", got.Position)
	require.Equal(t, 1, s.countRows(t, "SELECT count(*) FROM outbox WHERE type = $1 AND tenant_id = 'acme'", core.EventTenantFairShareSet))

	got = fairShareJSON{}
	s.ok(t, http.StatusOK, http.MethodGet, path, s.viewer, nil, nil).decode(t, &got)
	require.Equal(t, 4, got.Share)
	require.Equal(t, int64(1), got.Version)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/ops/fair-share", op, nil, nil)
	s.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodGet, "/v1/tenants/ops/fair-share", s.member, nil, nil)
	s.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodGet, "/v1/tenants/initech/fair-share", op, nil, nil)
}

type queueJSON struct {
	Scope               string     `json:"scope"`
	Position            int        `json:"position"`
	Queued              int        `json:"queued"`
	TenantUsageGPUHours float64    `json:"tenantUsageGpuHours"`
	TenantShare         int        `json:"tenantShare"`
	AsOf                *time.Time `json:"asOf"`
	Reason              string     `json:"reason"`
}

// GET /v1/reservations/{id} of a pending reservation shows its place in
// the waiting line of its pool: the scope and why it waits at once, its
// position, how many wait, and its tenant's usage and share once the
// line has run. A booked reservation has no queue.
func TestPendingReservationQueueOverHTTP(t *testing.T) {
	t.Parallel()
	s := setupClasses(t)
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/gpu", s.operator, `{"max":4}`, nil)
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/fair-share", s.operator, `{"share":3}`, nil)
	var booked, pending reservationJSON
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", s.member, s.reservationBody(t, 2), nil).decode(t, &booked)
	require.Equal(t, "booked", booked.State)
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", s.member, s.reservationBody(t, 2), nil).decode(t, &pending)
	require.Equal(t, "pending", pending.State)

	type detail struct {
		State      string           `json:"state"`
		Queue      *queueJSON       `json:"queue"`
		Conditions []core.Condition `json:"conditions"`
	}
	get := func(id, position string) detail {
		t.Helper()
		s.catchUp(t, position)
		var d detail
		s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations/"+id+"?minPosition="+position, s.member, nil, nil).decode(t, &d)
		return d
	}
	d := get(pending.ID, pending.Position)
	require.NotNil(t, d.Queue, "a pending reservation has a queue")
	require.Equal(t, "pool:fra1-gpu", d.Queue.Scope)
	require.Contains(t, d.Queue.Reason, "n1: 0 free", "why it waits: its Unschedulable condition")
	require.Zero(t, d.Queue.Position, "not ranked yet")
	require.Nil(t, d.Queue.AsOf)
	require.Len(t, d.Conditions, 1)
	require.Contains(t, d.Conditions[0].Message, "not ranked in the line of pool:fra1-gpu yet", "the why-pending condition says it too")
	require.Nil(t, get(booked.ID, booked.Position).Queue, "a booked reservation waits in no line")

	// The line runs after the retry interval, as a worker would run it.
	now := s.pg.AdvanceSimClock(t, commands.DefaultPendingRetryInterval)
	h := commands.New(s.pg.Pool, commands.Config{})
	again, err := commandstest.RunQueue(context.Background(), h, commands.PendingQueueKey("fra1-gpu", ""))
	require.NoError(t, err)
	require.Equal(t, commands.DefaultPendingRetryInterval, again, "it still waits")
	d = get(pending.ID, pending.Position)
	require.NotNil(t, d.Queue)
	require.Equal(t, queueJSON{Scope: "pool:fra1-gpu", Position: 1, Queued: 1, TenantShare: 3, AsOf: d.Queue.AsOf,
		TenantUsageGPUHours: d.Queue.TenantUsageGPUHours, Reason: d.Queue.Reason}, *d.Queue)
	require.NotNil(t, d.Queue.AsOf)
	require.True(t, d.Queue.AsOf.Equal(now))
	// acme held 2 GPUs for the 30 s: about a sixtieth of a GPU-hour.
	require.InDelta(t, 2*30.0/3600, d.Queue.TenantUsageGPUHours, 1e-4)
	require.Contains(t, d.Queue.Reason, "n1: 0 free")
	require.Len(t, d.Conditions, 1)
	require.Equal(t, core.ConditionUnschedulable, d.Conditions[0].Type)
	require.Contains(t, d.Conditions[0].Message, "n1: 0 free")
	require.Contains(t, d.Conditions[0].Message, "place in line: 1 of 1 in pool:fra1-gpu", "the why-pending condition gains the place")
}
