package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/docs"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/httpapi"
)

// eventsWait bounds waits on event visibility: the outbox frontier is
// cluster-wide, so other tests' transactions may hold it back briefly.
const eventsWait = 20 * time.Second

// eventServer is a test server with the event routes and a running broker.
type eventServer struct {
	*testServer
	broker *eventstream.Broker
}

// setupEvents starts a server whose broker polls every few milliseconds
// (the test needs no pokes) and stops it before the server closes, which
// also ends every open stream.
func setupEvents(t *testing.T, heartbeat time.Duration) *eventServer {
	t.Helper()
	return setupEventsWith(t, httpapi.EventAPI{Heartbeat: heartbeat})
}

// setupEventsWith is setupEvents with api's settings (heartbeat, limits);
// its Broker and Reader are filled in.
func setupEventsWith(t *testing.T, api httpapi.EventAPI) *eventServer {
	t.Helper()
	return setupEventsAdjusted(t, api, nil)
}

// setupEventsAdjusted is setupEventsWith with the server's dependencies
// adjusted by adjust (nil: none), as setupWith.
func setupEventsAdjusted(t *testing.T, api httpapi.EventAPI, adjust func(*httpapi.Deps)) *eventServer {
	t.Helper()
	return setupEventsBroker(t, api, adjust, eventstream.BrokerOptions{})
}

// setupEventsBroker is setupEventsAdjusted with the broker's options.
func setupEventsBroker(t *testing.T, api httpapi.EventAPI, adjust func(*httpapi.Deps), opts eventstream.BrokerOptions) *eventServer {
	t.Helper()
	es := &eventServer{}
	routes := func(r httpapi.Router) {
		es.broker = eventstream.NewBroker(r.Deps.Pool, opts)
		api.Broker, api.Reader = es.broker, eventstream.NewReader(r.Deps.Pool)
		httpapi.EventRoutes(api)(r)
	}
	es.testServer = setupWith(t, adjust, routes)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); es.broker.Run(ctx, 5*time.Millisecond, nil) }()
	t.Cleanup(func() { cancel(); <-ran }) // runs before the server's Close
	return es
}

// appendEvent appends one event in its own transaction.
func (s *eventServer) appendEvent(t *testing.T, tenant, typ string) uuid.UUID {
	t.Helper()
	e, err := core.NewEvent(typ, tenant, "subj-"+typ, map[string]string{"tenant": tenant})
	require.NoError(t, err)
	commandstest.AppendEvents(t, s.pg.Pool, e)
	return e.ID
}

type eventsPage struct {
	Items      []core.Event `json:"items"`
	NextCursor string       `json:"nextCursor"`
}

func (s *eventServer) list(t *testing.T, token, query string) eventsPage {
	t.Helper()
	r := s.call(t, http.MethodGet, "/v1/events?"+query, token, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var p eventsPage
	r.decode(t, &p)
	return p
}

// waitListed waits until token's unfiltered listing holds n events.
func (s *eventServer) waitListed(t *testing.T, token string, n int) eventsPage {
	t.Helper()
	var p eventsPage
	require.Eventually(t, func() bool {
		r := s.call(t, http.MethodGet, "/v1/events?limit=500", token, nil)
		p = eventsPage{}
		r.decode(t, &p)
		return len(p.Items) >= n
	}, eventsWait, 5*time.Millisecond)
	return p
}

func eventIDs(items []core.Event) []uuid.UUID {
	out := make([]uuid.UUID, len(items))
	for i, e := range items {
		out[i] = e.ID
	}
	return out
}

// Pages chain through nextCursor in order without gaps; tenants see only
// their events, operators all; the types filter applies; bad input is a
// 400 and a pruned cursor a 410.
func TestEventsListPagingScopingAndErrors(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, 0)
	_, a := s.tokenFor(t, "tenant-a", "viewer@a", core.RoleViewer)
	_, b := s.tokenFor(t, "tenant-b", "member@b", core.RoleMember)
	var wantA []uuid.UUID
	for i := range 5 {
		wantA = append(wantA, s.appendEvent(t, "tenant-a", []string{"instance.requested", "instance.stopped"}[i%2]))
	}
	bOnly := s.appendEvent(t, "tenant-b", "instance.requested")
	all := s.waitListed(t, s.operator, 6)
	require.Equal(t, append(append([]uuid.UUID{}, wantA...), bOnly), eventIDs(all.Items), "operators see every tenant")

	var got []uuid.UUID
	cursor := ""
	for range 3 {
		p := s.list(t, a, "limit=2&after="+cursor)
		got = append(got, eventIDs(p.Items)...)
		cursor = p.NextCursor
	}
	require.Equal(t, wantA, got, "pages of 2, in order, no gap, no repeat, only tenant A")
	last := s.list(t, a, "after="+cursor)
	require.Empty(t, last.Items)
	require.NotNil(t, last.Items, "an empty page is [], not null")
	require.Equal(t, cursor, last.NextCursor, "an empty page keeps the cursor")

	require.Equal(t, []uuid.UUID{bOnly}, eventIDs(s.list(t, b, "").Items), "B never sees A's events")
	created := s.list(t, a, "types=instance.requested")
	require.Equal(t, []uuid.UUID{wantA[0], wantA[2], wantA[4]}, eventIDs(created.Items))
	require.Equal(t, []uuid.UUID{wantA[0], wantA[1], wantA[2], wantA[3], wantA[4]},
		eventIDs(s.list(t, a, "types=instance.stopped&types=instance.requested").Items))

	e := all.Items[0]
	require.Equal(t, "tenant-a", e.TenantID)
	require.Equal(t, "subj-instance.requested", e.Subject)
	require.JSONEq(t, `{"tenant":"tenant-a"}`, string(e.Data))
	require.False(t, e.Time.IsZero())

	for _, q := range []string{"after=nope", "after=" + strings.Repeat("g", 32), "limit=0", "limit=501", "limit=x",
		"types=reservation.boked", "types=instance.requested,node.disconnected"} {
		r := s.call(t, http.MethodGet, "/v1/events?"+q, a, nil)
		require.Equal(t, http.StatusBadRequest, r.status, q)
		require.Equal(t, core.CodeInvalidArgument, r.errorBody(t).Code, q)
		if strings.HasPrefix(q, "types=") { // the stream's filter is the list's
			stream := s.call(t, http.MethodGet, "/v1/events/stream?"+q, a, nil)
			require.Equal(t, http.StatusBadRequest, stream.status, "stream "+q)
		}
	}

	// Retention prunes the oldest event: a cursor below it is gone.
	first := s.list(t, a, "limit=1").NextCursor
	_, err := s.pg.Pool.Exec(context.Background(), "DELETE FROM outbox WHERE id = $1", wantA[0])
	require.NoError(t, err)
	r := s.call(t, http.MethodGet, "/v1/events?after="+first, a, nil)
	require.Equal(t, http.StatusGone, r.status)
	require.Equal(t, core.CodeCursorExpired, r.errorBody(t).Code)
}

// The event routes are described in docs/openapi.yaml. (The server-wide
// check in TestOpenAPIMatchesRoutes needs EventRoutes in its feature list.)
func TestEventRoutesAreInOpenAPI(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, 0)
	var spec struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(docs.OpenAPI, &spec))
	var found int
	for _, r := range s.echo.Routes() {
		if !strings.HasPrefix(r.Path, "/v1/events") || r.Method == echo.RouteNotFound {
			continue
		}
		found++
		_, ok := spec.Paths[r.Path][strings.ToLower(r.Method)]
		require.True(t, ok, "%s %s is not in docs/openapi.yaml", r.Method, r.Path)
	}
	require.Equal(t, 3, found, "the page, the stream and POST /v1/events/stream-tickets")
}
