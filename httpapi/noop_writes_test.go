package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/outbox"
)

// Every PUT and PATCH (and the cordon, taint and quarantine actions) sent
// with the state the object already has is a no-op: 200, the version it
// had, a zero or absent position, and no event in the log. Each request
// is sent twice; the fleet is as setupFleet leaves it, so the first is
// already a no-op. Two real quota changes bracket them, so the log between
// them must hold nothing but the second.
func TestRequestsThatChangeNothingWriteNothing(t *testing.T) {
	t.Parallel()
	f := setupFleet(t, webhookRoutes)
	var ep struct {
		ID      string `json:"id"`
		Version int64  `json:"version"`
	}
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/webhook-endpoints", f.member,
		map[string]any{"url": "https://hooks.acme.example/in", "eventTypes": []string{"reservation.booked"}, "description": "prod"},
		nil).decode(t, &ep)

	before := quotaSetPosition(t, f, 501)
	for _, c := range []struct {
		method, path, token string
		body                any
	}{
		{http.MethodPatch, "/v1/sites/fra1", f.operator, map[string]any{"name": "Frankfurt 1"}},
		{http.MethodPut, "/v1/tenants/acme/quotas/gpu", f.operator, map[string]any{"max": 2}},
		{http.MethodPut, "/v1/tenants/acme/fair-share", f.operator, map[string]any{"share": 1}},
		{http.MethodPost, "/v1/tenants/acme/resume", f.operator, nil}, // acme is not suspended
		{http.MethodPut, "/v1/tenants/acme/priority-classes", f.operator, map[string]any{"classes": []string{}}},
		{http.MethodPut, "/v1/devices/GPU-n1-0/health", f.operator, map[string]any{"health": "healthy"}},
		{http.MethodPut, "/v1/gpus/GPU-n1-1/mode", f.operator, map[string]any{"mode": "exclusive"}},
		{http.MethodPost, "/v1/nodes/n1/uncordon", f.operator, nil},
		{http.MethodPost, "/v1/nodes/n1/untaint", f.operator, map[string]any{"key": "maintenance"}},
		{http.MethodPost, "/v1/devices/GPU-n1-0/unquarantine", f.operator, nil},
		{http.MethodPatch, "/v1/webhook-endpoints/" + ep.ID, f.member, map[string]any{}},
		{http.MethodPatch, "/v1/webhook-endpoints/" + ep.ID, f.member,
			map[string]any{"url": "https://hooks.acme.example/in", "eventTypes": []string{"reservation.booked"}, "description": "prod", "enabled": true}},
	} {
		var versions []int64
		for range 2 {
			var got struct {
				Version  int64  `json:"version"`
				Position string `json:"position"`
			}
			f.ok(t, http.StatusOK, c.method, c.path, c.token, c.body, nil).decode(t, &got)
			require.Equal(t, strings.Repeat("0", len(got.Position)), got.Position, "%s %s: no event, so no position", c.method, c.path)
			versions = append(versions, got.Version)
		}
		require.Equal(t, versions[0], versions[1], "%s %s keeps the version", c.method, c.path)
	}
	after := quotaSetPosition(t, f, 502)

	var between []string
	require.Eventually(t, func() bool {
		events, err := outbox.ReadAfter(context.Background(), f.pg.Q, before, 1000)
		require.NoError(t, err)
		between = between[:0]
		for _, e := range events {
			if !after.Less(e.Position) {
				between = append(between, e.Type+" "+e.Subject)
			}
		}
		return len(events) > 0 && !events[len(events)-1].Position.Less(after)
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, []string{"quota.set quotas/acme/disk"}, between,
		"the log between the two real changes holds the second alone")
}

// quotaSetPosition sets acme's disk quota to max, a real change, and
// returns the position of its quota.set.
func quotaSetPosition(t *testing.T, f *fleet, max int) outbox.Position {
	t.Helper()
	var got struct {
		Max      int    `json:"max"`
		Position string `json:"position"`
	}
	f.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/disk", f.operator, map[string]int{"max": max}, nil).decode(t, &got)
	require.Equal(t, max, got.Max)
	p, err := outbox.ParsePosition(got.Position)
	require.NoError(t, err)
	require.False(t, p.IsZero())
	return p
}
