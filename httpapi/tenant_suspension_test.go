package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/queries"
)

// setupSuspension starts two API processes on one database: a, which
// serves the writes, the tenant reads and the event stream, with an
// uncached authenticator (as setup's), and b, which serves the event
// stream with the production cache (authn.CacheTTL), so that it learns of a
// suspension only through the authz feed (its Sync, run by the test).
func setupSuspension(t *testing.T) (a, b *eventServer) {
	t.Helper()
	a = &eventServer{}
	a.testServer = setupWith(t, nil, func(r httpapi.Router) {
		a.broker = eventstream.NewBroker(r.Deps.Pool, eventstream.BrokerOptions{})
		httpapi.EventRoutes(httpapi.EventAPI{Broker: a.broker, Reader: eventstream.NewReader(r.Deps.Pool)})(r)
		httpapi.CapacityRoutes(r.Deps.Commands)(r)
		httpapi.TenantReadRoutes(queries.New(r.Deps.Pool))(r)
	})
	runBroker(t, a.broker)

	b = &eventServer{broker: eventstream.NewBroker(a.pg.Pool, eventstream.BrokerOptions{})}
	logs := &testenv.LogBuffer{}
	d := httpapi.Deps{Pool: a.pg.Pool, Commands: commands.New(a.pg.Pool, commands.Config{}), Clock: a.clock, Auth: authn.New(a.pg.Pool, authn.CacheTTL),
		Logger: slog.New(slog.NewJSONHandler(logs, nil)), BodyLimit: testBodyLimit, Registry: prometheus.NewRegistry()}
	e := httpapi.New(d, httpapi.EventRoutes(httpapi.EventAPI{Broker: b.broker, Reader: eventstream.NewReader(a.pg.Pool)}))
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	runBroker(t, b.broker)
	b.testServer = &testServer{url: srv.URL, pg: a.pg, echo: e, clock: a.clock, auth: d.Auth.(*authn.Authenticator),
		logs: logs, operator: a.operator}
	return a, b
}

func runBroker(t *testing.T, broker *eventstream.Broker) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); broker.Run(ctx, 5*time.Millisecond, nil) }()
	t.Cleanup(func() { cancel(); <-ran })
}

// lastFrame waits until c's stream ends, syncing auth's feed meanwhile, and
// returns its last frame.
func (c *sseClient) lastFrame(t *testing.T, auth *authn.Authenticator) sseFrame {
	t.Helper()
	var last sseFrame
	require.Eventually(t, func() bool {
		require.NoError(t, auth.Sync(t.Context()))
		for {
			select {
			case f, ok := <-c.frames:
				if !ok {
					return true
				}
				last = f
			default:
				return false
			}
		}
	}, eventsWait, 5*time.Millisecond, "the suspended tenant's stream ends")
	return last
}

// requireSuspendedFrame checks that f is the error frame of a suspension.
func requireSuspendedFrame(t *testing.T, f sseFrame, reason string) {
	t.Helper()
	require.Equal(t, "error", f.event, "the last frame says why the stream ended: %+v", f)
	var body httpapi.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(f.data), &body), "data: %s", f.data)
	require.Equal(t, core.CodeTenantSuspended, body.Error.Code)
	require.Contains(t, body.Error.Message, reason)
}

type suspensionJSON struct {
	Tenant               string     `json:"tenant"`
	Suspended            bool       `json:"suspended"`
	Reason               string     `json:"reason"`
	SuspendedAt          *time.Time `json:"suspendedAt"`
	Version              int64      `json:"version"`
	ReleasedReservations []string   `json:"releasedReservations"`
	Position             string     `json:"position"`
}

// An operator suspends a tenant over the API: from the answer on, its
// tokens are refused with TENANT_SUSPENDED naming the reason, by the
// process that ran it at once and by another process once its authz feed
// brings the change (its 30-second cache notwithstanding); the tenant's
// event streams on both end with an error frame saying so. A repeat
// changes nothing, members and unknown tenants are refused, and resume
// restores the tokens, except one that expired meanwhile.
func TestTenantSuspensionOverHTTP(t *testing.T) {
	t.Parallel()
	a, b := setupSuspension(t)
	require.NoError(t, a.auth.Sync(t.Context()))
	require.NoError(t, b.auth.Sync(t.Context()))
	_, member := a.tokenFor(t, "acme", "bob@acme", core.RoleMember)
	_, other := a.tokenFor(t, "globex", "carol@globex", core.RoleMember)
	expiry := pgtest.SimEpoch.Add(time.Minute).Format(time.RFC3339)
	r := a.call(t, http.MethodPost, "/v1/tokens", a.operator,
		map[string]string{"tenant": "acme", "identity": "ci@acme", "role": "member", "expiresAt": expiry})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var short struct{ Token string }
	r.decode(t, &short)

	whoami := func(s *eventServer, token string) response {
		return s.call(t, http.MethodGet, "/v1/whoami", token, nil)
	}
	require.Equal(t, http.StatusOK, whoami(b, member).status) // b caches it for 30 s
	streamA := a.openStream(t, member, "", "")
	require.Equal(t, http.StatusOK, streamA.res.StatusCode)
	streamA.first(t)
	streamB := b.openStream(t, member, "", "")
	require.Equal(t, http.StatusOK, streamB.res.StatusCode)
	streamB.first(t)
	ticket, _ := a.ticketFor(t, member) // redeemed after the suspend

	suspend := func(tenant, token string, body any) response {
		return a.call(t, http.MethodPost, "/v1/tenants/"+tenant+"/suspend", token, body)
	}
	reason := map[string]any{"reason": "invoice 2026-11 unpaid"}
	r = suspend("acme", other, reason)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Equal(t, core.CodePermissionDenied, r.errorBody(t).Code)
	r = suspend("nobody", a.operator, reason)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, core.CodeNotFound, r.errorBody(t).Code)
	r = suspend("acme", a.operator, map[string]any{})
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, core.CodeInvalidArgument, r.errorBody(t).Code)
	r = suspend("ops", a.operator, reason)
	require.Equal(t, http.StatusConflict, r.status, "the operators' own tenant: %s", r.body)

	r = suspend("acme", a.operator, reason)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var got suspensionJSON
	r.decode(t, &got)
	require.True(t, got.Suspended)
	require.Equal(t, "invoice 2026-11 unpaid", got.Reason)
	require.NotEqual(t, outbox.Position{}.String(), got.Position)
	r = suspend("acme", a.operator, reason)
	require.Equal(t, http.StatusOK, r.status, "a repeat is no error: %s", r.body)
	var again suspensionJSON
	r.decode(t, &again)
	require.Equal(t, outbox.Position{}.String(), again.Position, "a repeat writes nothing")
	require.Equal(t, got.Version, again.Version)

	// The process that suspended refuses at once; its stream ended.
	r = whoami(a, member)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Equal(t, core.CodeTenantSuspended, r.errorBody(t).Code)
	require.Contains(t, r.errorBody(t).Message, "invoice 2026-11 unpaid")
	requireSuspendedFrame(t, streamA.lastFrame(t, a.auth), "invoice 2026-11 unpaid")
	r = a.call(t, http.MethodPost, "/v1/reservations", member, map[string]any{"poolId": "p", "gpus": 1})
	require.Equal(t, core.CodeTenantSuspended, r.errorBody(t).Code)
	// The other process, once its feed brings the change.
	requireSuspendedFrame(t, streamB.lastFrame(t, b.auth), "invoice 2026-11 unpaid")
	r = whoami(b, member)
	require.Equal(t, http.StatusForbidden, r.status, "b dropped its cached entry: %s", r.body)
	require.Equal(t, core.CodeTenantSuspended, r.errorBody(t).Code)
	reopened := b.openStream(t, member, "", "")
	require.Equal(t, http.StatusForbidden, reopened.res.StatusCode)
	// A ticket the tenant asked for before the suspend is refused like its
	// tokens: 403 naming the reason, not the 401 of an unknown ticket.
	status, _, body := a.ticketStream(t, ticket, "", nil)
	require.Equal(t, http.StatusForbidden, status, "body: %s", body)
	var refusal httpapi.ErrorBody
	require.NoError(t, json.Unmarshal(body, &refusal), "body: %s", body)
	require.Equal(t, core.CodeTenantSuspended, refusal.Error.Code)
	require.Contains(t, refusal.Error.Message, "invoice 2026-11 unpaid")
	require.Equal(t, http.StatusOK, whoami(b, other).status, "another tenant goes on")

	var tenant queries.Tenant
	a.mustCall(t, http.StatusOK, http.MethodGet, "/v1/tenants/acme", a.operator, nil, &tenant)
	require.True(t, tenant.Suspended)
	require.Equal(t, "invoice 2026-11 unpaid", tenant.SuspendedReason)
	events := a.list(t, a.operator, "types=tenant.suspended,tenant.resumed")
	require.Len(t, events.Items, 1)
	require.Equal(t, "acme", events.Items[0].TenantID)
	require.Contains(t, string(events.Items[0].Data), "invoice 2026-11 unpaid")

	// The short token expires while the tenant is suspended.
	a.pg.AdvanceSimClock(t, 2*time.Minute)
	r = a.call(t, http.MethodPost, "/v1/tenants/acme/resume", other, nil)
	require.Equal(t, core.CodePermissionDenied, r.errorBody(t).Code)
	r = a.call(t, http.MethodPost, "/v1/tenants/acme/resume", a.operator, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var resumed suspensionJSON
	r.decode(t, &resumed)
	require.False(t, resumed.Suspended)
	require.Equal(t, got.Version+1, resumed.Version)
	require.Equal(t, http.StatusOK, whoami(a, member).status)
	require.Eventually(t, func() bool {
		require.NoError(t, b.auth.Sync(t.Context()))
		return whoami(b, member).status == http.StatusOK
	}, eventsWait, 5*time.Millisecond, "b drops its cached refusal once the feed brings the resume")
	r = whoami(a, short.Token)
	require.Equal(t, http.StatusUnauthorized, r.status, "a token that expired meanwhile stays expired")
	events = a.list(t, a.operator, "types=tenant.suspended,tenant.resumed")
	require.Len(t, events.Items, 2)
	require.Equal(t, core.EventTenantResumed, events.Items[1].Type)
}
