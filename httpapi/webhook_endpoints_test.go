package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/docs"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/webhook"
)

// webhookRoutes builds the webhook service on the test server's own pool.
func webhookRoutes(r httpapi.Router) {
	svc := webhook.New(r.Deps.Pool, commands.New(r.Deps.Pool, commands.Config{}), webhook.Config{AllowPrivate: true}, slog.New(slog.DiscardHandler))
	httpapi.WebhookRoutes(svc)(r)
}

type webhookEndpointJSON struct {
	ID             string     `json:"id"`
	Tenant         string     `json:"tenant"`
	URL            string     `json:"url"`
	EventTypes     []string   `json:"eventTypes"`
	Description    string     `json:"description"`
	Enabled        bool       `json:"enabled"`
	DisabledReason string     `json:"disabledReason"`
	FailingSince   *time.Time `json:"failingSince"`
	Version        int64      `json:"version"`
	Position       string     `json:"position"`
	Secret         string     `json:"secret"`
}

func TestWebhookEndpointLifecycle(t *testing.T) {
	t.Parallel()
	s := setup(t, webhookRoutes)
	_, member := s.tokenFor(t, "acme", "alice", core.RoleMember)
	_, viewer := s.tokenFor(t, "acme", "vic", core.RoleViewer)
	_, globex := s.tokenFor(t, "globex", "hank", core.RoleMember)

	r := s.call(t, http.MethodPost, "/v1/webhook-endpoints", member,
		map[string]any{"url": "https://hooks.acme.example/in", "eventTypes": []string{"reservation.booked"}, "description": "prod"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, "no-store", r.header.Get("Cache-Control"))
	var created webhookEndpointJSON
	r.decode(t, &created)
	require.Regexp(t, `^whsec_`, created.Secret)
	require.Equal(t, "acme", created.Tenant)
	require.True(t, created.Enabled)
	require.NotEmpty(t, created.Position)
	path := "/v1/webhook-endpoints/" + created.ID

	// The secret is never shown again; viewers read; other tenants see nothing.
	r = s.call(t, http.MethodGet, path, viewer, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.NotContains(t, string(r.body), created.Secret)
	require.NotContains(t, string(r.body), `"secret"`)
	r = s.call(t, http.MethodGet, path, globex, nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, core.CodeNotFound, r.errorBody(t).Code)
	r = s.call(t, http.MethodGet, "/v1/webhook-endpoints", globex, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"items":[],"nextCursor":""}`, string(r.body))
	r = s.call(t, http.MethodGet, "/v1/webhook-endpoints?limit=10", member, nil)
	var list struct {
		Items      []webhookEndpointJSON `json:"items"`
		NextCursor string                `json:"nextCursor"`
	}
	r.decode(t, &list)
	require.Len(t, list.Items, 1)
	require.Equal(t, created.ID, list.Items[0].ID)

	// Viewers may not write.
	r = s.call(t, http.MethodPatch, path, viewer, map[string]any{"enabled": false})
	require.Equal(t, http.StatusForbidden, r.status)

	// Patch with If-Match: a stale version conflicts, the current one applies.
	req, err := http.NewRequest(http.MethodPatch, s.url+path, strings.NewReader(`{"enabled":false}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+member)
	req.Header.Set("If-Match", "99")
	r = s.do(t, req)
	require.Equal(t, http.StatusConflict, r.status, "body: %s", r.body)
	r = s.call(t, http.MethodPatch, path, member, map[string]any{"enabled": false, "description": "paused"})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var patched webhookEndpointJSON
	r.decode(t, &patched)
	require.False(t, patched.Enabled)
	require.Equal(t, "manual", patched.DisabledReason)
	require.Equal(t, created.Version+1, patched.Version)

	// Recover needs an enabled endpoint and a since.
	r = s.call(t, http.MethodPost, path+"/recover", member, map[string]any{"since": "2030-01-01T00:00:00Z"})
	require.Equal(t, http.StatusConflict, r.status, "body: %s", r.body)
	r = s.call(t, http.MethodPatch, path, member, map[string]any{"enabled": true})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	r = s.call(t, http.MethodPost, path+"/recover", member, map[string]any{})
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Contains(t, r.errorBody(t).Message, "since")
	r = s.call(t, http.MethodPost, path+"/recover", member, map[string]any{"since": "2030-01-01T00:00:00Z"})
	require.Equal(t, http.StatusAccepted, r.status, "body: %s", r.body)
	var recovered struct {
		Scheduled     *int       `json:"scheduled"`
		Truncated     *bool      `json:"truncated"`
		RetainedSince *time.Time `json:"retainedSince"`
	}
	require.NoError(t, json.Unmarshal(r.body, &recovered))
	require.Equal(t, 0, *recovered.Scheduled)
	require.False(t, *recovered.Truncated)
	require.NotNil(t, recovered.RetainedSince, "when the oldest retained event happened")
	// One recover per endpoint per minute: the next is 429 with Retry-After.
	r = s.call(t, http.MethodPost, path+"/recover", member, map[string]any{"since": "2030-01-01T00:00:00Z"})
	require.Equal(t, http.StatusTooManyRequests, r.status, "body: %s", r.body)
	require.Equal(t, core.CodeRateLimited, r.errorBody(t).Code)
	require.Equal(t, "60", r.header.Get("Retry-After"))

	// Rotate shows a new secret once.
	r = s.call(t, http.MethodPost, path+"/rotate-secret", member, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var rotated webhookEndpointJSON
	r.decode(t, &rotated)
	require.Regexp(t, `^whsec_`, rotated.Secret)
	require.NotEqual(t, created.Secret, rotated.Secret)

	r = s.call(t, http.MethodGet, path+"/attempts", member, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.JSONEq(t, `{"items":[],"nextCursor":""}`, string(r.body))
	r = s.call(t, http.MethodGet, path+"/attempts?cursor=nope", member, nil)
	require.Equal(t, http.StatusBadRequest, r.status)

	r = s.call(t, http.MethodDelete, path, globex, nil)
	require.Equal(t, http.StatusNotFound, r.status)
	r = s.call(t, http.MethodDelete, path, member, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	r = s.call(t, http.MethodGet, path, member, nil)
	require.Equal(t, http.StatusNotFound, r.status)
}

// Both webhook lists page with opaque cursors, like every other list: a
// cursor names neither an endpoint id nor an attempt id, chains through
// every item once, and a raw id (or another list's cursor) is refused.
func TestWebhookListCursorsAreOpaque(t *testing.T) {
	t.Parallel()
	s := setup(t, webhookRoutes)
	_, member := s.tokenFor(t, "acme", "alice", core.RoleMember)
	type page struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
		NextCursor string `json:"nextCursor"`
	}
	list := func(path string) page {
		t.Helper()
		r := s.call(t, http.MethodGet, path, member, nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		var p page
		r.decode(t, &p)
		return p
	}
	walk := func(path string) (ids, cursors []string) {
		t.Helper()
		p := list(path + "?limit=1")
		for {
			for _, it := range p.Items {
				ids = append(ids, it.ID)
			}
			if p.NextCursor == "" {
				return ids, cursors
			}
			cursors = append(cursors, p.NextCursor)
			p = list(path + "?limit=1&cursor=" + url.QueryEscape(p.NextCursor))
		}
	}
	opaque := func(ids, cursors []string) {
		t.Helper()
		require.NotEmpty(t, cursors)
		for _, c := range cursors {
			require.Regexp(t, `^[A-Za-z0-9_-]+$`, c)
			require.NotRegexp(t, `^[0-9]+$`, c, "a raw attempt id")
			for _, id := range ids {
				if len(id) > 3 { // ids of attempts are small numbers: any cursor may hold their digits
					require.NotContains(t, c, id, "a cursor must not show the key it stands for")
				}
			}
		}
	}

	var endpoints []string
	for _, u := range []string{"https://a.example/in", "https://b.example/in", "https://c.example/in"} {
		r := s.call(t, http.MethodPost, "/v1/webhook-endpoints", member, map[string]any{"url": u})
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		var e webhookEndpointJSON
		r.decode(t, &e)
		endpoints = append(endpoints, e.ID)
	}
	ids, epCursors := walk("/v1/webhook-endpoints")
	require.ElementsMatch(t, endpoints, ids)
	opaque(ids, epCursors)

	ctx := context.Background()
	var delivery string
	require.NoError(t, s.pg.Pool.QueryRow(ctx, `INSERT INTO webhook_deliveries (endpoint_id, event_id)
		VALUES ($1, gen_random_uuid()) RETURNING id::text`, endpoints[0]).Scan(&delivery))
	for i := 1; i <= 3; i++ {
		_, err := s.pg.Pool.Exec(ctx, `INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_id, attempt, latency_ms)
			VALUES ($1, $2, gen_random_uuid(), $3, 1)`, delivery, endpoints[0], i)
		require.NoError(t, err)
	}
	attempts := "/v1/webhook-endpoints/" + endpoints[0] + "/attempts"
	ids, atCursors := walk(attempts)
	require.Len(t, ids, 3)
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(ids))), 3, "every attempt once")
	opaque(ids, atCursors)

	for path, bad := range map[string]string{
		"/v1/webhook-endpoints":         endpoints[1], // the raw key
		attempts:                        ids[1],
		"/v1/webhook-endpoints?limit=1": atCursors[0], // another list's cursor
		attempts + "?limit=1":           epCursors[0],
	} {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		r := s.call(t, http.MethodGet, path+sep+"cursor="+url.QueryEscape(bad), member, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "%s with cursor %q: %s", path, bad, r.body)
		require.Equal(t, core.CodeInvalidArgument, r.errorBody(t).Code)
	}
}

func TestWebhookEndpointRejectsBadInput(t *testing.T) {
	t.Parallel()
	s := setup(t, webhookRoutes)
	_, member := s.tokenFor(t, "acme", "alice", core.RoleMember)
	for name, body := range map[string]string{
		"user info":      `{"url":"https://u:p@x.example/"}`,
		"scheme":         `{"url":"file:///etc/passwd"}`,
		"missing url":    `{"eventTypes":["a.b"]}`,
		"bad type":       `{"url":"https://x.example/","eventTypes":["Bad Type"]}`,
		"unknown field":  `{"url":"https://x.example/","secret":"whsec_x"}`,
		"foreign tenant": `{"url":"https://x.example/","tenant":"globex"}`,
	} {
		r := s.call(t, http.MethodPost, "/v1/webhook-endpoints", member, body)
		require.Contains(t, []int{http.StatusBadRequest, http.StatusForbidden}, r.status, "%s: %s", name, r.body)
		require.NotEmpty(t, r.errorBody(t).Code)
	}
}

// An operator registering an endpoint for another tenant names a tenant
// that exists: a typo (acmee) is 404, as for quotas, and creates no tenant,
// where it answered 201 with an endpoint no event of acme would ever reach;
// a tenant id no token could carry is 400 naming the rule, not a
// constraint.
func TestWebhookEndpointForAnotherTenantNeedsTheTenant(t *testing.T) {
	t.Parallel()
	s := setup(t, webhookRoutes)
	s.tokenFor(t, "acme", "alice", core.RoleMember)
	for tenant, want := range map[string]core.Code{"acmee": core.CodeNotFound, "Bad!": core.CodeInvalidArgument} {
		r := s.call(t, http.MethodPost, "/v1/webhook-endpoints", s.operator,
			map[string]any{"url": "https://hooks.acme.example/in", "tenant": tenant})
		e := r.errorBody(t)
		require.Equal(t, want, e.Code, "%s: %s", tenant, r.body)
		require.Contains(t, e.Message, "tenant", tenant)
		require.NotContains(t, e.Message, "tenants_id_check", tenant)
	}
	var tenants, endpoints int
	require.NoError(t, s.pg.Pool.QueryRow(t.Context(),
		"SELECT (SELECT count(*) FROM tenants WHERE id = 'acmee'), (SELECT count(*) FROM webhook_endpoints)").Scan(&tenants, &endpoints))
	require.Zero(t, tenants, "no tenant minted by a typo")
	require.Zero(t, endpoints, "nothing registered")
	s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/webhook-endpoints", s.operator,
		map[string]any{"url": "https://hooks.acme.example/in", "tenant": "acme"}, nil)
}

// Every webhook route is described in docs/openapi.yaml and every webhook
// path there is served. (TestOpenAPIMatchesRoutes builds its server without
// feature routes; this covers ours until it takes them.)
func TestWebhookRoutesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	s := setup(t, webhookRoutes)
	param := regexp.MustCompile(`:([A-Za-z0-9_]+)`)
	var registered []string
	for _, r := range s.echo.Routes() {
		if r.Method != echo.RouteNotFound && strings.HasPrefix(r.Path, "/v1/webhook-endpoints") {
			registered = append(registered, r.Method+" "+param.ReplaceAllString(r.Path, "{$1}"))
		}
	}
	var spec struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(docs.OpenAPI, &spec))
	var described []string
	for path, item := range spec.Paths {
		if !strings.HasPrefix(path, "/v1/webhook-endpoints") {
			continue
		}
		for method := range item {
			if method != "parameters" {
				described = append(described, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(registered)
	slices.Sort(described)
	require.Len(t, registered, 8)
	require.Equal(t, described, registered)
}
