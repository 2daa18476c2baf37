package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
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

// configReadServer is a server with the capacity commands and every read
// route, the fleet site fra1 (pools fra1-a, fra1-b) and site ams1 (pool
// ams1-a), and tenants acme and globex with quotas and a member token each.
type configReadServer struct {
	*testServer
	h             *commands.Handlers
	acme, globex  string // member bearer secrets
	acmeTokenID   string
	globexTokenID string
}

func setupConfigReads(t *testing.T) *configReadServer {
	t.Helper()
	s := &configReadServer{}
	s.testServer = setup(t, func(r httpapi.Router) {
		s.h = commands.New(r.Deps.Pool, commands.Config{})
		q := queries.New(r.Deps.Pool)
		httpapi.CapacityRoutes(s.h)(r)
		httpapi.ReadRoutes(q)(r)
		httpapi.FleetReadRoutes(q)(r)
		httpapi.TenantReadRoutes(q)(r)
	})
	for _, site := range []string{"fra1", "ams1"} {
		s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/sites", s.operator, map[string]string{"id": site, "name": strings.ToUpper(site)}, nil)
	}
	for _, p := range []struct{ id, site, kind string }{{"fra1-b", "fra1", "bare-metal"}, {"fra1-a", "fra1", "provider"}, {"ams1-a", "ams1", "bare-metal"}} {
		body := map[string]any{"id": p.id, "siteId": p.site, "kind": p.kind, "cpuRatio": 2}
		if p.kind == "provider" {
			body["lostAfterSeconds"] = 600
		}
		s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/pools", s.operator, body, nil)
	}
	s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/nodes", s.operator, map[string]any{
		"id": "n1", "poolId": "fra1-b", "vcpu": 64, "memoryMb": 524288, "diskGb": 2000,
		"gpus": []map[string]any{{"uuid": "GPU-n1-0", "model": "a100", "memoryMb": 81920}, {"uuid": "GPU-n1-1", "model": "a100", "memoryMb": 81920}},
	}, nil)
	// Issuing a tenant its first token creates the tenant.
	s.acmeTokenID, s.acme = s.tokenFor(t, "acme", "bob@acme", core.RoleMember)
	s.globexTokenID, s.globex = s.tokenFor(t, "globex", "carol@globex", core.RoleMember)
	for _, tn := range []string{"acme", "globex"} {
		for res, max := range map[string]int{"gpu": 4, "gpu:a100": 2, "vcpu": 100, "memory": 1 << 20, "disk": 1000} {
			s.mustCall(t, http.StatusOK, http.MethodPut, "/v1/tenants/"+tn+"/quotas/"+res, s.operator, map[string]int{"max": max}, nil)
		}
	}
	return s
}

// mustCall is call requiring status, decoding the body into v (nil: not).
func (s *testServer) mustCall(t *testing.T, status int, method, path, token string, body, v any) response {
	t.Helper()
	r := s.call(t, method, path, token, body)
	require.Equal(t, status, r.status, "%s %s: %s", method, path, r.body)
	if v != nil {
		r.decode(t, v)
	}
	return r
}

// page is the Page every list answers with.
type page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor"`
}

// readAll pages through a list with limit items a page and returns every
// item and how many pages it took.
func readAll[T any](t *testing.T, s *testServer, path, token string, limit int) ([]T, int) {
	t.Helper()
	var all []T
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	cursor, pages := "", 0
	for {
		var p page[T]
		s.mustCall(t, http.StatusOK, http.MethodGet, fmt.Sprintf("%s%slimit=%d&cursor=%s", path, sep, limit, cursor), token, nil, &p)
		require.NotNil(t, p.Items, "items is [], never null")
		require.LessOrEqual(t, len(p.Items), limit)
		all = append(all, p.Items...)
		pages++
		if p.NextCursor == "" {
			return all, pages
		}
		require.Len(t, p.Items, limit, "only the last page is short")
		cursor = p.NextCursor
		require.Less(t, pages, 100, "paging does not end")
	}
}

func TestSitesAndPoolsAreReadableByEveryRole(t *testing.T) {
	t.Parallel()
	s := setupConfigReads(t)
	_, viewer := s.tokenFor(t, "acme", "vic@acme", core.RoleViewer)

	for _, token := range []string{s.operator, s.acme, viewer} {
		sites, pages := readAll[queries.Site](t, s.testServer, "/v1/sites", token, 1)
		require.Equal(t, 2, pages, "two sites, a page of one each")
		require.Len(t, sites, 2)
		require.Equal(t, "ams1", sites[0].ID, "in id order")
		require.Equal(t, "fra1", sites[1].ID)
		require.Equal(t, "FRA1", sites[1].Name)
		require.Equal(t, int64(1), sites[1].Version)
		require.True(t, sites[1].CreatedAt.Equal(pgtest.SimEpoch))

		var site queries.Site
		s.mustCall(t, http.StatusOK, http.MethodGet, "/v1/sites/fra1", token, nil, &site)
		require.Equal(t, sites[1], site)

		pools, _ := readAll[queries.Pool](t, s.testServer, "/v1/pools", token, 2)
		require.Equal(t, []string{"ams1-a", "fra1-a", "fra1-b"}, poolIDs(pools))
		pools, _ = readAll[queries.Pool](t, s.testServer, "/v1/pools?site=fra1", token, 1)
		require.Equal(t, []string{"fra1-a", "fra1-b"}, poolIDs(pools))

		var pool queries.Pool
		s.mustCall(t, http.StatusOK, http.MethodGet, "/v1/pools/fra1-a", token, nil, &pool)
		require.Equal(t, "fra1", pool.SiteID)
		require.Equal(t, "provider", pool.Kind)
		require.Equal(t, 2.0, pool.CPURatio)
		require.Equal(t, 1.0, pool.MemoryRatio)
		require.NotNil(t, pool.LostAfterSeconds)
		require.Equal(t, int32(600), *pool.LostAfterSeconds)
		var bare queries.Pool
		s.mustCall(t, http.StatusOK, http.MethodGet, "/v1/pools/fra1-b", token, nil, &bare)
		require.Nil(t, bare.LostAfterSeconds, "bare metal is never lost")
	}

	for _, path := range []string{"/v1/sites/nope", "/v1/pools/nope"} {
		r := s.call(t, http.MethodGet, path, s.acme, nil)
		require.Equal(t, http.StatusNotFound, r.status, "%s: %s", path, r.body)
		require.Equal(t, core.CodeNotFound, r.errorBody(t).Code)
	}
	// Every list refuses a bad page request the same way, and a cursor of
	// one list is no cursor of another.
	var sites page[queries.Site]
	s.mustCall(t, http.StatusOK, http.MethodGet, "/v1/sites?limit=1", s.acme, nil, &sites)
	require.NotEmpty(t, sites.NextCursor)
	for _, path := range []string{"/v1/sites?limit=0", "/v1/pools?limit=501", "/v1/sites?cursor=bogus",
		"/v1/pools?cursor=" + sites.NextCursor, "/v1/tenants?cursor=" + sites.NextCursor, "/v1/tokens?cursor=" + sites.NextCursor} {
		r := s.call(t, http.MethodGet, path, s.acme, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", path, r.body)
		require.Equal(t, core.CodeInvalidArgument, r.errorBody(t).Code)
	}
}

func poolIDs(ps []queries.Pool) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}

// Tenants: an operator reads every tenant, anyone else only its own, and
// another tenant answers exactly like one that does not exist.
func TestTenantsAreReadByOperatorsAndThemselves(t *testing.T) {
	t.Parallel()
	s := setupConfigReads(t)

	all, _ := readAll[queries.Tenant](t, s.testServer, "/v1/tenants", s.operator, 2)
	var ids []string
	for _, tn := range all {
		ids = append(ids, tn.ID)
	}
	require.Equal(t, []string{"acme", "globex", "ops"}, ids)

	own, _ := readAll[queries.Tenant](t, s.testServer, "/v1/tenants", s.acme, 1)
	require.Len(t, own, 1)
	require.Equal(t, "acme", own[0].ID)

	var tn queries.Tenant
	s.mustCall(t, http.StatusOK, http.MethodGet, "/v1/tenants/acme", s.acme, nil, &tn)
	require.Equal(t, "acme", tn.ID)
	s.mustCall(t, http.StatusOK, http.MethodGet, "/v1/tenants/globex", s.operator, nil, &tn)
	require.Equal(t, "globex", tn.ID)

	for _, path := range []string{"/v1/tenants/%s", "/v1/tenants/%s/quotas"} {
		foreign := s.call(t, http.MethodGet, fmt.Sprintf(path, "globex"), s.acme, nil)
		unknown := s.call(t, http.MethodGet, fmt.Sprintf(path, "nobody"), s.acme, nil)
		require.Equal(t, http.StatusNotFound, foreign.status, "%s", foreign.body)
		require.Equal(t, http.StatusNotFound, unknown.status, "%s", unknown.body)
		require.Equal(t, strings.ReplaceAll(foreign.errorBody(t).Message, "globex", "X"),
			strings.ReplaceAll(unknown.errorBody(t).Message, "nobody", "X"), "no existence oracle")
	}
	r := s.call(t, http.MethodGet, "/v1/tenants/nobody/quotas", s.operator, nil)
	require.Equal(t, http.StatusNotFound, r.status, "an operator too: %s", r.body)
}

// Quotas show limit and use by resource, and use follows reservations.
func TestTenantQuotasShowLimitAndUse(t *testing.T) {
	t.Parallel()
	s := setupConfigReads(t)
	now := s.pg.Now(t)
	s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/reservations", s.acme, map[string]any{
		"poolId": "fra1-b", "gpus": 1, "vcpu": 8, "memoryMb": 1024, "diskGb": 10,
		"start": now.Format(time.RFC3339), "end": now.Add(time.Hour).Format(time.RFC3339)}, nil)

	for _, token := range []string{s.acme, s.operator} {
		quotas, pages := readAll[queries.Quota](t, s.testServer, "/v1/tenants/acme/quotas", token, 2)
		require.Equal(t, 3, pages)
		got := map[string][2]int64{}
		for _, q := range quotas {
			require.Equal(t, "acme", q.Tenant)
			got[q.Resource] = [2]int64{q.Used, q.Max}
		}
		require.Equal(t, map[string][2]int64{"disk": {10, 1000}, "gpu": {1, 4}, "gpu:a100": {1, 2},
			"memory": {1024, 1 << 20}, "vcpu": {8, 100}}, got)
		require.Equal(t, "disk", quotas[0].Resource, "in resource order")
	}
	globex, _ := readAll[queries.Quota](t, s.testServer, "/v1/tenants/globex/quotas", s.operator, 10)
	for _, q := range globex {
		require.Zero(t, q.Used, "globex reserved nothing: %s", q.Resource)
	}
}

// The token list never shows a secret or its hash; a tenant sees its own
// tokens only, whatever it asks for; an operator sees all or one tenant's.
func TestTokenListShowsMetadataOnly(t *testing.T) {
	t.Parallel()
	s := setupConfigReads(t)
	s.pg.AdvanceSimClock(t, time.Second) // vic's token is created after bob's
	expiry := s.pg.Now(t).Add(24 * time.Hour)
	var viewer struct {
		ID string `json:"id"`
	}
	s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator, map[string]string{
		"tenant": "acme", "identity": "vic@acme", "role": "viewer", "expiresAt": expiry.Format(time.RFC3339Nano)}, &viewer)
	viewerID := viewer.ID
	s.mustCall(t, http.StatusOK, http.MethodDelete, "/v1/tokens/"+viewerID, s.operator, nil, nil)

	all, _ := readAll[map[string]any](t, s.testServer, "/v1/tokens", s.operator, 2)
	require.Len(t, all, 4, "root, bob, carol and vic")
	var root struct {
		TokenID string `json:"tokenId"`
	}
	s.mustCall(t, http.StatusOK, http.MethodGet, "/v1/whoami", s.operator, nil, &root)
	for _, tok := range all {
		for k := range tok {
			require.Contains(t, []string{"id", "tenant", "identity", "role", "createdAt", "revokedAt", "expiresAt", "issuedBy"}, k, "no secret, no hash")
		}
		if tok["id"] == root.TokenID {
			require.NotContains(t, tok, "issuedBy", "the system issued root")
		} else {
			require.Equal(t, root.TokenID, tok["issuedBy"], "operators see who issued each token")
		}
	}

	var own []queries.Token
	for _, path := range []string{"/v1/tokens", "/v1/tokens?tenant=globex"} {
		own, _ = readAll[queries.Token](t, s.testServer, path, s.acme, 1)
		require.Len(t, own, 2, "%s: bob and vic only", path)
		for _, tok := range own {
			require.Equal(t, "acme", tok.Tenant)
			require.Nil(t, tok.IssuedBy, "a tenant never learns an operator's token id")
		}
	}
	require.Equal(t, s.acmeTokenID, own[0].ID, "in creation order")
	require.Equal(t, "bob@acme", own[0].Identity)
	require.Equal(t, core.RoleMember, own[0].Role)
	require.Nil(t, own[0].RevokedAt)
	require.Equal(t, viewerID, own[1].ID)
	require.NotNil(t, own[1].RevokedAt, "revoked tokens are listed, with when")
	require.Nil(t, own[0].ExpiresAt, "bob's never expires")
	require.NotNil(t, own[1].ExpiresAt)
	require.True(t, own[1].ExpiresAt.Equal(expiry), "vic's expiry is listed")

	globex, _ := readAll[queries.Token](t, s.testServer, "/v1/tokens?tenant=globex", s.operator, 5)
	require.Len(t, globex, 1)
	require.Equal(t, s.globexTokenID, globex[0].ID)
}

// A reservation's GET shows the request it was made from, what it charged
// and its allocation; the list stays the read model's view.
func TestReservationGetShowsSpecChargesAndAllocation(t *testing.T) {
	t.Parallel()
	s := setupConfigReads(t)
	ctx := context.Background()
	now := s.pg.Now(t)
	var booked struct{ ID string }
	s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/reservations", s.acme, map[string]any{
		"poolId": "fra1-b", "gpus": 1, "gpuModel": "a100", "vcpu": 8, "memoryMb": 1024, "diskGb": 10,
		"start": now.Format(time.RFC3339), "end": now.Add(time.Hour).Format(time.RFC3339)}, &booked)
	// Two more GPUs than the node has: pending, never placed.
	var pending struct{ ID, State string }
	s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/reservations", s.acme, map[string]any{
		"poolId": "fra1-b", "gpus": 3, "start": now.Format(time.RFC3339), "end": now.Add(time.Hour).Format(time.RFC3339)}, &pending)
	require.Equal(t, "pending", pending.State)
	configReadsCatchUp(t, s.testServer)

	var got queries.ReservationDetail
	s.mustCall(t, http.StatusOK, http.MethodGet, "/v1/reservations/"+booked.ID, s.acme, nil, &got)
	require.Equal(t, core.ReservationBooked, got.State)
	require.Equal(t, 1, got.Spec.GPU.Count)
	require.Equal(t, "a100", got.Spec.GPU.Model)
	require.Equal(t, int64(8), got.Spec.VCPU)
	require.Equal(t, int64(1024), got.Spec.MemoryMB)
	require.Equal(t, int64(10), got.Spec.DiskGB)
	require.Equal(t, map[string]int64{"gpu": 1, "gpu:a100": 1, "vcpu": 8, "memory": 1024, "disk": 10}, got.Charges,
		"the per-model charge placement made included")
	require.NotNil(t, got.Allocation)
	var allocID string
	require.NoError(t, s.pg.Pool.QueryRow(ctx, "SELECT id FROM allocations WHERE reservation_id = $1", booked.ID).Scan(&allocID))
	require.Equal(t, allocID, got.Allocation.ID)
	require.Equal(t, "n1", got.Allocation.NodeID)
	require.Equal(t, got.DeviceIDs, got.Allocation.DeviceIDs)
	require.Len(t, got.Allocation.DeviceIDs, 1)
	require.Equal(t, int64(8), got.Allocation.VCPU)
	require.Nil(t, got.Allocation.ReleasedAt)

	s.mustCall(t, http.StatusOK, http.MethodPost, "/v1/reservations/"+booked.ID+"/release", s.acme, nil, nil)
	s.mustCall(t, http.StatusOK, http.MethodGet, "/v1/reservations/"+booked.ID, s.acme, nil, &got)
	require.NotNil(t, got.Allocation.ReleasedAt, "the allocation stays, released")

	var raw map[string]any
	s.mustCall(t, http.StatusOK, http.MethodGet, "/v1/reservations/"+pending.ID, s.acme, nil, &raw)
	require.Contains(t, raw, "allocation")
	require.Nil(t, raw["allocation"], "never placed: null")
	require.Equal(t, map[string]any{"gpu": 3.0}, raw["charges"])
	require.Equal(t, 3.0, raw["spec"].(map[string]any)["gpu"].(map[string]any)["count"])

	r := s.call(t, http.MethodGet, "/v1/reservations/"+booked.ID, s.globex, nil)
	require.Equal(t, http.StatusNotFound, r.status, "another tenant's detail is 404 too: %s", r.body)
}

// configReadsCatchUp runs every projection past the newest event.
func configReadsCatchUp(t *testing.T, s *testServer) {
	t.Helper()
	ctx := context.Background()
	var head outbox.Position
	require.NoError(t, s.pg.Pool.QueryRow(ctx, "SELECT txid::text::bigint, seq FROM outbox ORDER BY txid DESC, seq DESC LIMIT 1").
		Scan(&head.TxID, &head.Seq))
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
			done = done && !cur.Less(head)
		}
		return done
	}, 20*time.Second, 2*time.Millisecond)
}
