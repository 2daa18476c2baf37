package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/bettercompute/compute/client"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/docs"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/webhook"
)

// webhookEntry is the name, under `webhooks:` in docs/openapi.yaml, of the
// request every webhook endpoint receives.
const webhookEntry = "event"

// webhookOperation is the part of a webhooks entry's operation the test
// holds deliveries to.
type webhookOperation struct {
	Security   []any `yaml:"security"`
	Parameters []struct {
		Name     string         `yaml:"name"`
		In       string         `yaml:"in"`
		Required bool           `yaml:"required"`
		Schema   map[string]any `yaml:"schema"`
	} `yaml:"parameters"`
	RequestBody struct {
		Required bool `yaml:"required"`
		Content  map[string]struct {
			Schema map[string]any `yaml:"schema"`
		} `yaml:"content"`
	} `yaml:"requestBody"`
	Responses map[string]any `yaml:"responses"`
}

// transportHeaders are set by Go's HTTP client on every request, not by the
// sender: they describe the connection, not the webhook, and OpenAPI leaves
// them out of an operation's parameters.
var transportHeaders = []string{"Accept-Encoding", "Content-Length"}

// capturedRequest is one request a webhook receiver got.
type capturedRequest struct {
	method string
	path   string
	header http.Header
	body   []byte
}

// webhookSink is an httptest receiver that records every request and
// answers 204.
type webhookSink struct {
	*httptest.Server
	mu  sync.Mutex
	got []capturedRequest
}

func newWebhookSink(t *testing.T) *webhookSink {
	t.Helper()
	s := &webhookSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, capturedRequest{method: r.Method, path: r.URL.RequestURI(), header: r.Header.Clone(), body: body})
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Server.Close)
	return s
}

func (s *webhookSink) requests() []capturedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// The `webhooks:` entry of docs/openapi.yaml is what a receiver really
// gets: real deliveries, made by the webhook scheduler and delivery worker
// from events that API calls wrote, carry the documented method, exactly
// the documented headers with values of their schemas, a Content-Type the
// request body lists, and a body that validates against its schema (the
// TypedEvent variant its `type` names) and is the event GET /v1/events
// returns. The documented signature verifies under every secret that signs:
// one, then two after a rotation.
func TestWebhookDeliveryMatchesOpenAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	var svc *webhook.Service
	routes := func(r httpapi.Router) {
		svc = webhook.New(r.Deps.Pool, commands.New(r.Deps.Pool, commands.Config{}),
			webhook.Config{AllowPrivate: true}, logger) // the receiver is on loopback
		httpapi.WebhookRoutes(svc)(r)
		httpapi.EventRoutes(httpapi.EventAPI{Broker: eventstream.NewBroker(r.Deps.Pool, eventstream.BrokerOptions{}),
			Reader: eventstream.NewReader(r.Deps.Pool)})(r)
	}
	f := setupFleet(t, routes)
	disp := outbox.NewTxDispatcher(f.pg.Pool, "test-dispatcher", svc.Scheduler(), logger)
	worker := workqueue.NewWorker(f.pg.Pool, "test-worker", clock.New(logger), logger)
	worker.Handle(webhook.KindDeliver, svc.Deliver)
	worker.HandlePrefetch(webhook.KindDeliver, svc.Prefetch)
	sink := newWebhookSink(t)

	// deliver runs the scheduler and the worker until the sink has n
	// requests (the outbox frontier is cluster-wide: another test's open
	// transaction may hide an event for a moment).
	deliver := func(n int) []capturedRequest {
		t.Helper()
		require.Eventually(t, func() bool {
			_, err := disp.RunOnce(ctx)
			require.NoError(t, err)
			_, err = worker.RunOnce(ctx)
			require.NoError(t, err)
			return len(sink.requests()) >= n
		}, eventsWait, 5*time.Millisecond, "%d deliveries", n)
		got := sink.requests()
		require.Len(t, got, n)
		return got
	}

	// An endpoint for every event type, and a booking: the endpoint's own
	// webhook_endpoint.created and reservation.booked, signed by one secret.
	var ep webhookEndpointJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/webhook-endpoints", f.member,
		map[string]any{"url": sink.URL + "/hooks/compute"}, nil).decode(t, &ep)
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, f.reservationBody(t, 1), nil)
	deliver(2)
	// A rotation: webhook_endpoint.secret_rotated, signed by both secrets.
	var rotated webhookEndpointJSON
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/webhook-endpoints/"+ep.ID+"/rotate-secret", f.member, nil, nil).decode(t, &rotated)
	got := deliver(3)

	var events eventsPage
	f.ok(t, http.StatusOK, http.MethodGet, "/v1/events?limit=500", f.member, nil, nil).decode(t, &events)
	now := f.pg.Now(t)
	secrets := [][]string{{ep.Secret}, {ep.Secret}, {rotated.Secret, ep.Secret}}
	var types []string
	for i, req := range got {
		body := checkWebhookRequest(t, req)
		require.Equal(t, "/hooks/compute", req.path, "the endpoint's URL as registered")
		signatures := strings.Fields(req.header.Get(webhook.HeaderSignature))
		require.Len(t, signatures, len(secrets[i]), "one signature per secret that signs: %v", signatures)
		for j, secret := range secrets[i] { // the new secret's signature first, as documented
			one := req.header.Clone()
			one.Set(webhook.HeaderSignature, signatures[j])
			require.NoError(t, webhook.VerifyAt(secret, one, req.body, now), "delivery %d, signature %d", i, j)
		}
		types = append(types, body.Type)
		require.Equal(t, "acme", body.TenantID)
		at := slices.IndexFunc(events.Items, func(e core.Event) bool { return e.ID == body.ID })
		require.GreaterOrEqual(t, at, 0, "event %s is not in GET /v1/events", body.ID)
		want, err := json.Marshal(events.Items[at])
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(req.body), "the body is the event as GET /v1/events has it")
		checkGeneratedClientDecodes(t, req.body, ep.ID)
	}
	// An endpoint takes a few deliveries at once: the first two may arrive in
	// either order.
	require.ElementsMatch(t, []string{core.EventWebhookEndpointCreated, core.EventReservationBooked}, types[:2])
	require.Equal(t, core.EventWebhookEndpointSecretRotated, types[2])
}

// checkWebhookRequest validates one captured request against the webhooks
// entry of docs/openapi.yaml and returns its body decoded.
func checkWebhookRequest(t *testing.T, req capturedRequest) core.Event {
	t.Helper()
	var spec struct {
		Webhooks map[string]map[string]webhookOperation `yaml:"webhooks"`
	}
	require.NoError(t, yaml.Unmarshal(docs.OpenAPI, &spec))
	entry, ok := spec.Webhooks[webhookEntry]
	require.True(t, ok, "docs/openapi.yaml has no webhooks.%s", webhookEntry)
	require.Len(t, entry, 1, "webhooks.%s describes one request", webhookEntry)
	op, ok := entry[strings.ToLower(req.method)]
	require.True(t, ok, "the delivery is a %s; webhooks.%s describes %v", req.method, webhookEntry, entry)
	require.NotNil(t, op.Security, "a delivery carries no API token: its security is []")
	require.Empty(t, op.Security)
	s := loadSchemas(t)

	// Headers: the documented ones with values of their schemas, and no
	// other but the transport's and Content-Type.
	documented := map[string]bool{}
	for _, p := range op.Parameters {
		require.Equal(t, "header", p.In, "a delivery has only header parameters: %s", p.Name)
		name := http.CanonicalHeaderKey(p.Name)
		documented[name] = true
		values := req.header.Values(name)
		if !p.Required && len(values) == 0 {
			continue
		}
		require.Len(t, values, 1, "header %s (required: %v)", p.Name, p.Required)
		var v any = values[0]
		if slices.Contains(typesOf(p.Schema), "integer") && regexp.MustCompile(`^-?[0-9]+$`).MatchString(values[0]) {
			v = json.Number(values[0]) // a header's integer travels as its digits
		}
		s.check(t, "header "+p.Name, p.Schema, v)
	}
	for name := range req.header {
		if name == "Content-Type" || slices.Contains(transportHeaders, name) {
			continue
		}
		require.True(t, documented[name], "the delivery sends header %s, which webhooks.%s does not document", name, webhookEntry)
	}

	// Body: the schema of its media type.
	require.True(t, op.RequestBody.Required)
	mediaType, _, err := mime.ParseMediaType(req.header.Get("Content-Type"))
	require.NoError(t, err)
	content, ok := op.RequestBody.Content[mediaType]
	require.True(t, ok, "the delivery is %s; the request body documents %v", mediaType, op.RequestBody.Content)
	dec := json.NewDecoder(strings.NewReader(string(req.body)))
	dec.UseNumber()
	var body any
	require.NoError(t, dec.Decode(&body))
	s.check(t, "webhook body", content.Schema, body)

	// Responses: the outcomes the delivery worker tells apart (webhook/retry.go):
	// success, gone, Retry-After honoured, any other failure.
	require.Equal(t, []string{"2XX", "410", "429", "502", "504", "default"}, slices.Sorted(maps.Keys(op.Responses)))

	var ev core.Event
	require.NoError(t, json.Unmarshal(req.body, &ev))
	require.Equal(t, ev.ID.String(), req.header.Get(webhook.HeaderID), "webhook-id is the event's id")
	return ev
}

// checkGeneratedClientDecodes decodes a delivery's body with the Go client
// that docs/openapi.yaml generates: client.TypedEvent, then the variant its
// type names, with the payload of the event that was sent.
func checkGeneratedClientDecodes(t *testing.T, body []byte, endpointID string) {
	t.Helper()
	var typed client.TypedEvent
	require.NoError(t, json.Unmarshal(body, &typed))
	v, err := typed.ValueByDiscriminator()
	require.NoError(t, err)
	switch e := v.(type) {
	case client.ReservationEvent:
		require.Equal(t, "acme", e.TenantID)
		require.Equal(t, client.ReservationEventDataStateBooked, e.Data.State)
		require.Equal(t, "reservations/"+e.Data.ID, e.Subject)
	case client.WebhookEndpointEvent:
		require.Equal(t, "acme", e.TenantID)
		require.Equal(t, endpointID, e.Data.EndpointID)
		require.True(t, e.Data.Enabled)
	default:
		t.Fatalf("the generated client decodes %s as %T", body, v)
	}
}
