package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/queries"
)

// The read routes answer from the read models: tenant-scoped lists with
// cursors, 404 for another tenant's reservation, operator-only fleet
// routes, point-in-time holders and read-your-writes through minPosition.
func TestReadRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var q *queries.Service
	s := setup(t, func(r httpapi.Router) {
		q = queries.New(r.Deps.Pool)
		q.WaitTimeout = 100 * time.Millisecond
		httpapi.ReadRoutes(q)(r)
	})
	h := commands.New(s.pg.Pool, commands.Config{})
	op := core.Actor{Tenant: "ops", Identity: "root@ops", Role: core.RoleOperator}
	for _, tn := range []string{"acme", "globex"} {
		require.NoError(t, s.pg.Q.TenantEnsure(ctx, tn))
		for _, res := range []string{"gpu", "vcpu", "memory", "disk"} {
			_, err := h.SetQuota(ctx, op, commands.SetQuota{Tenant: tn, Resource: res, Max: 1000})
			require.NoError(t, err)
		}
	}
	_, err := h.CreateSite(ctx, op, commands.CreateSite{ID: "fra1", Name: "F"})
	require.NoError(t, err)
	_, err = h.CreatePool(ctx, op, commands.CreatePool{ID: "p1", SiteID: "fra1", Kind: commands.PoolBareMetal})
	require.NoError(t, err)
	_, err = h.RegisterNode(ctx, op, commands.RegisterNode{ID: "n1", PoolID: "p1", VCPU: 8, MemoryMB: 1024, DiskGB: 10,
		GPUs: []commands.GPUInventory{{UUID: "GPU-1", Model: "a100", MemoryMB: 81920, Layout: core.GPULayout{Mode: core.GPUExclusive}},
			{UUID: "GPU-2", Model: "a100", MemoryMB: 81920, Layout: core.GPULayout{Mode: core.GPUExclusive}}}})
	require.NoError(t, err)
	acme := core.Actor{Tenant: "acme", Identity: "bob@acme", Role: core.RoleMember}
	globex := core.Actor{Tenant: "globex", Identity: "carol@globex", Role: core.RoleMember}
	var mine []string
	for range 2 {
		r, err := h.CreateReservation(ctx, acme, commands.CreateReservation{PoolID: "p1", GPUs: 1, VCPU: 1,
			Start: pgtest.SimEpoch, End: pgtest.SimEpoch.Add(time.Hour)})
		require.NoError(t, err)
		mine = append(mine, r.Reservation.ID)
	}
	theirs, err := h.CreateReservation(ctx, globex, commands.CreateReservation{PoolID: "p1", VCPU: 1,
		Start: pgtest.SimEpoch, End: pgtest.SimEpoch.Add(time.Hour)})
	require.NoError(t, err)
	_, acmeToken := s.tokenFor(t, "acme", "bob@acme", core.RoleMember)

	// Before the projections run, minPosition makes the read wait and then
	// give up with 503 rather than answer without the write.
	pos := theirs.Position.String()
	r := s.call(t, http.MethodGet, "/v1/reservations/"+theirs.Reservation.ID+"?minPosition="+pos, s.operator, nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status, "body: %s", r.body)

	var disps []*outbox.Dispatcher
	for _, p := range projections.All() {
		disps = append(disps, outbox.NewTxDispatcher(s.pg.Pool, "test", p, nil))
	}
	require.Eventually(t, func() bool {
		done := true
		for _, d := range disps {
			_, err := d.RunOnce(ctx)
			require.NoError(t, err)
			cur, err := outbox.CursorOf(ctx, s.pg.Q, d.SinkID())
			require.NoError(t, err)
			done = done && !cur.Less(theirs.Position)
		}
		return done
	}, 20*time.Second, 2*time.Millisecond)

	r = s.call(t, http.MethodGet, "/v1/reservations/"+theirs.Reservation.ID+"?minPosition="+pos, s.operator, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	r = s.call(t, http.MethodGet, "/v1/reservations/"+theirs.Reservation.ID, acmeToken, nil)
	require.Equal(t, http.StatusNotFound, r.status, "another tenant's reservation")
	require.Equal(t, core.CodeNotFound, r.errorBody(t).Code)

	var page struct {
		Items      []queries.Reservation `json:"items"`
		NextCursor string                `json:"nextCursor"`
	}
	r = s.call(t, http.MethodGet, "/v1/reservations?limit=1", acmeToken, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	r.decode(t, &page)
	require.Len(t, page.Items, 1)
	require.Equal(t, mine[0], page.Items[0].ID)
	require.NotEmpty(t, page.NextCursor)
	r = s.call(t, http.MethodGet, "/v1/reservations?limit=1&cursor="+url.QueryEscape(page.NextCursor), acmeToken, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	r.decode(t, &page)
	require.Equal(t, mine[1], page.Items[0].ID)
	require.Empty(t, page.NextCursor)

	for _, bad := range []string{"/v1/reservations?limit=x", "/v1/reservations?minPosition=zz", "/v1/reservations?state=nope",
		"/v1/reservations?cursor=%21", "/v1/devices/GPU-1/holders?at=yesterday"} {
		r = s.call(t, http.MethodGet, bad, s.operator, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", bad, r.body)
	}
	for _, opOnly := range []string{"/v1/nodes", "/v1/nodes/n1", "/v1/pools/p1/capacity", "/v1/devices/GPU-1/holders?at=2030-01-01T00:30:00Z"} {
		r = s.call(t, http.MethodGet, opOnly, acmeToken, nil)
		require.Equal(t, http.StatusForbidden, r.status, opOnly)
		r = s.call(t, http.MethodGet, opOnly, s.operator, nil)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", opOnly, r.body)
	}

	var node queries.Node
	r = s.call(t, http.MethodGet, "/v1/nodes/n1", s.operator, nil)
	r.decode(t, &node)
	require.Equal(t, int64(3), node.VCPU.Allocated)
	require.Len(t, node.Devices, 2)
	var holders struct {
		Holders []queries.Holder `json:"holders"`
	}
	r = s.call(t, http.MethodGet, "/v1/devices/GPU-1/holders?at=2030-01-01T00:30:00Z", s.operator, nil)
	r.decode(t, &holders)
	require.Len(t, holders.Holders, 1)
	require.Contains(t, mine, holders.Holders[0].ReservationID)

	var windows struct {
		Items []queries.UsageWindow `json:"items"`
	}
	r = s.call(t, http.MethodGet, "/v1/usage-windows", acmeToken, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	r.decode(t, &windows)
	require.Len(t, windows.Items, 2, "one hour of each of acme's reservations")
	for _, w := range windows.Items {
		require.NotEqual(t, w.ReservationID, w.AllocationID)
		require.Equal(t, fmt.Sprintf("cmp:%s:2030-01-01T00:00:00Z", w.AllocationID), w.Key, "keyed by allocation")
		require.Equal(t, int64(3600_000), w.DeviceMs)
	}
	usageHostile(t, s, acmeToken, theirs.Reservation.ID, windows.Items)
	r = s.call(t, http.MethodGet, "/v1/reservations/nope", acmeToken, nil)
	require.Equal(t, http.StatusNotFound, r.status)
}

// usageHostile asks GET /v1/usage-windows what a tenant should not get: another
// tenant's windows (by tenant or by reservation: its own, or nothing), pages
// from a tampered cursor (a position, never a way around the tenant filter),
// a cursor of another list, bad limits and bytes. mine are acme's windows.
func usageHostile(t *testing.T, s *testServer, acmeToken, theirs string, mine []queries.UsageWindow) {
	t.Helper()
	list := func(query, token string) []queries.UsageWindow {
		t.Helper()
		var page struct {
			Items []queries.UsageWindow `json:"items"`
		}
		r := s.call(t, http.MethodGet, "/v1/usage-windows?"+query, token, nil)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", query, r.body)
		r.decode(t, &page)
		return page.Items
	}
	require.Equal(t, mine, list("tenant=globex", acmeToken), "a tenant's ?tenant= is ignored: its own windows")
	require.Empty(t, list("reservation="+url.QueryEscape(theirs), acmeToken), "another tenant's reservation")
	theirWindows := list("reservation="+url.QueryEscape(theirs), s.operator)
	require.Len(t, theirWindows, 1, "the operator sees it: one hour of vCPU, no device")
	require.Equal(t, "globex", theirWindows[0].Tenant)
	epoch := queries.EncodeCursor("usage", "0001-01-01T00:00:00Z", "")
	require.Equal(t, mine, list("cursor="+url.QueryEscape(epoch), acmeToken), "a cursor before everything: still only its own")
	future := queries.EncodeCursor("usage", "9999-12-31T23:59:59Z", "")
	require.Empty(t, list("cursor="+url.QueryEscape(future), acmeToken))

	var paged []queries.UsageWindow
	cursor := ""
	for range len(mine) + 1 {
		var page struct {
			Items      []queries.UsageWindow `json:"items"`
			NextCursor string                `json:"nextCursor"`
		}
		r := s.call(t, http.MethodGet, "/v1/usage-windows?limit=1&cursor="+url.QueryEscape(cursor), acmeToken, nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		r.decode(t, &page)
		paged = append(paged, page.Items...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	require.Equal(t, mine, paged, "one window a page: each once, in order")

	for _, bad := range []string{
		"cursor=" + url.QueryEscape(queries.EncodeCursor("rsv", "x")),
		"cursor=" + url.QueryEscape(queries.EncodeCursor("usage", "yesterday", "")),
		"cursor=" + url.QueryEscape(queries.EncodeCursor("usage", "2030-01-01T00:00:00Z", "k", "extra")),
		"limit=501", "limit=0", "limit=99999999999999999999", "reservation=%00", "reservation=%ff",
		"minPosition=ffffffffffffffffffffffffffffffff",
	} {
		r := s.call(t, http.MethodGet, "/v1/usage-windows?"+bad, acmeToken, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", bad, r.body)
		require.Equal(t, core.CodeInvalidArgument, r.errorBody(t).Code, bad)
	}
}
