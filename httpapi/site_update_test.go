package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/queries"
)

// siteServer is a server with the capacity commands and the fleet reads,
// site fra1 ("Frankfurt 1") created through the API, and a member and a
// viewer token of tenant acme.
type siteServer struct {
	*testServer
	member, viewer string
}

func setupSites(t *testing.T) *siteServer {
	t.Helper()
	s := &siteServer{}
	s.testServer = setup(t, func(r httpapi.Router) {
		httpapi.CapacityRoutes(commands.New(r.Deps.Pool, commands.Config{}))(r)
		httpapi.FleetReadRoutes(queries.New(r.Deps.Pool))(r)
	})
	r := s.send(t, http.MethodPost, "/v1/sites", s.operator, `{"id":"fra1","name":"Frankfurt 1"}`, nil)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	_, s.member = s.tokenFor(t, "acme", "bob@acme", core.RoleMember)
	_, s.viewer = s.tokenFor(t, "acme", "vic@acme", core.RoleViewer)
	return s
}

// siteJSON is a site as the write and read routes show it.
type siteJSON struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Version  int64  `json:"version"`
	Position string `json:"position"`
}

// patchSite sends PATCH /v1/sites/{id} with a raw body, a content type
// ("" for none) and headers.
func (s *siteServer) patchSite(t *testing.T, id, token, contentType, body string, hdr map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPatch, s.url+"/v1/sites/"+id, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return s.do(t, req)
}

// readSite is GET /v1/sites/{id}, and the site as GET /v1/sites lists it.
func (s *siteServer) readSite(t *testing.T, id string) (one, listed siteJSON) {
	t.Helper()
	r := s.send(t, http.MethodGet, "/v1/sites/"+id, s.viewer, nil, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.decode(t, &one)
	r = s.send(t, http.MethodGet, "/v1/sites", s.viewer, nil, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var page struct {
		Items []siteJSON `json:"items"`
	}
	r.decode(t, &page)
	for _, it := range page.Items {
		if it.ID == id {
			listed = it
		}
	}
	require.Equal(t, id, listed.ID, "GET /v1/sites does not list %s", id)
	return one, listed
}

func (s *siteServer) countSiteUpdated(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, s.pg.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM outbox WHERE type = $1", core.EventSiteUpdated).Scan(&n))
	return n
}

// An operator renames a site; the reads show the new name at once. The
// Idempotency-Key replays, a reused key with another name is 422, and
// If-Match takes the version the reads show.
func TestUpdateSiteOverHTTP(t *testing.T) {
	t.Parallel()
	s := setupSites(t)
	one, _ := s.readSite(t, "fra1")
	require.EqualValues(t, 1, one.Version)

	key := map[string]string{"Idempotency-Key": "rename-1", "If-Match": `"1"`}
	first := s.patchSite(t, "fra1", s.operator, "application/json", `{"name":"Frankfurt Main"}`, key)
	require.Equal(t, http.StatusOK, first.status, "%s", first.body)
	var site siteJSON
	first.decode(t, &site)
	require.Equal(t, "fra1", site.ID)
	require.Equal(t, "Frankfurt Main", site.Name)
	require.EqualValues(t, 2, site.Version)
	require.Regexp(t, positionPattern, site.Position)
	require.NotEqual(t, strings.Repeat("0", 32), site.Position)

	one, listed := s.readSite(t, "fra1")
	require.Equal(t, "Frankfurt Main", one.Name)
	require.EqualValues(t, 2, one.Version)
	require.Equal(t, "Frankfurt Main", listed.Name)
	require.EqualValues(t, 2, listed.Version)

	// The same key and body replay the answer and rename nothing more,
	// though If-Match 1 is stale by now: the stored answer is the answer.
	again := s.patchSite(t, "fra1", s.operator, "application/json", `{"name":"Frankfurt Main"}`, key)
	require.Equal(t, http.StatusOK, again.status, "%s", again.body)
	require.Equal(t, string(first.body), string(again.body))
	require.Equal(t, 1, s.countSiteUpdated(t))

	// The same key with another name is refused.
	r := s.patchSite(t, "fra1", s.operator, "application/json", `{"name":"Elsewhere"}`, key)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	require.Equal(t, core.CodeIdempotencyKeyReused, r.errorBody(t).Code)

	// A stale If-Match is CONFLICT and changes nothing; the current one,
	// bare, applies.
	r = s.patchSite(t, "fra1", s.operator, "application/json", `{"name":"Elsewhere"}`, map[string]string{"If-Match": "1"})
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	require.Equal(t, core.CodeConflict, r.errorBody(t).Code)
	require.Contains(t, r.errorBody(t).Message, "version 2")
	r = s.patchSite(t, "fra1", s.operator, "application/json", `{"name":"FRA-1"}`, map[string]string{"If-Match": "2"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.decode(t, &site)
	require.EqualValues(t, 3, site.Version)

	// No If-Match, no key: applies to whatever version.
	r = s.patchSite(t, "fra1", s.operator, "application/json", `{"name":"Frankfurt"}`, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	one, listed = s.readSite(t, "fra1")
	require.Equal(t, siteJSON{ID: "fra1", Name: "Frankfurt", Version: 4}, one)
	require.Equal(t, one, listed)
	require.Equal(t, 3, s.countSiteUpdated(t))

	// The name it already has: 200, the same version, no event, a zero
	// position.
	r = s.patchSite(t, "fra1", s.operator, "application/json", `{"name":"Frankfurt"}`, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.decode(t, &site)
	require.EqualValues(t, 4, site.Version)
	require.Equal(t, strings.Repeat("0", 32), site.Position)
	require.Equal(t, 3, s.countSiteUpdated(t))
}

// Bad input, the wrong caller and an unknown site are refused with their
// codes, never a 500, and change nothing.
func TestUpdateSiteRefusedOverHTTP(t *testing.T) {
	t.Parallel()
	s := setupSites(t)
	const json = "application/json"
	good := `{"name":"Renamed"}`
	for _, c := range []struct {
		name        string
		id, token   string
		contentType string
		body        string
		hdr         map[string]string
		status      int
		code        core.Code
		message     string // a part of the message, "" for any
	}{
		{"no name", "fra1", s.operator, json, `{}`, nil, 400, core.CodeInvalidArgument, `"name" is required`},
		{"empty name", "fra1", s.operator, json, `{"name":""}`, nil, 400, core.CodeInvalidArgument, `"name" is required`},
		{"blank name", "fra1", s.operator, json, `{"name":"  \t"}`, nil, 400, core.CodeInvalidArgument, `"name" is required`},
		{"null name", "fra1", s.operator, json, `{"name":null}`, nil, 400, core.CodeInvalidArgument, `"name" is required`},
		{"name not a string", "fra1", s.operator, json, `{"name":5}`, nil, 400, core.CodeInvalidArgument, "name"},
		{"NUL in name", "fra1", s.operator, json, `{"name":"a\u0000b"}`, nil, 400, core.CodeInvalidArgument, "NUL"},
		{"unknown field", "fra1", s.operator, json, `{"name":"x","id":"other"}`, nil, 400, core.CodeInvalidArgument, `unknown field "id"`},
		{"field in the wrong case", "fra1", s.operator, json, `{"Name":"x"}`, nil, 400, core.CodeInvalidArgument, `unknown field "Name"`},
		{"no body", "fra1", s.operator, json, ``, nil, 400, core.CodeInvalidArgument, "body is required"},
		{"null body", "fra1", s.operator, json, `null`, nil, 400, core.CodeInvalidArgument, ""},
		{"an array", "fra1", s.operator, json, `["x"]`, nil, 400, core.CodeInvalidArgument, ""},
		{"malformed JSON", "fra1", s.operator, json, `{"name":`, nil, 400, core.CodeInvalidArgument, "malformed JSON"},
		{"data after the body", "fra1", s.operator, json, good + `{}`, nil, 400, core.CodeInvalidArgument, "after the JSON value"},
		{"no content type", "fra1", s.operator, "", good, nil, 400, core.CodeInvalidArgument, "Content-Type"},
		{"not JSON", "fra1", s.operator, "text/plain", good, nil, 415, core.CodeUnsupportedMediaType, ""},
		{"If-Match not a version", "fra1", s.operator, json, good, map[string]string{"If-Match": "abc"}, 400, core.CodeInvalidArgument, "If-Match"},
		{"If-Match 0", "fra1", s.operator, json, good, map[string]string{"If-Match": "0"}, 400, core.CodeInvalidArgument, "If-Match"},
		{"If-Match two versions", "fra1", s.operator, json, good, map[string]string{"If-Match": "1, 2"}, 400, core.CodeInvalidArgument, "If-Match"},
		{"Idempotency-Key too long", "fra1", s.operator, json, good, map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}, 400, core.CodeInvalidArgument, "Idempotency-Key"},
		{"stale If-Match", "fra1", s.operator, json, good, map[string]string{"If-Match": "9"}, 409, core.CodeConflict, "version 1"},
		{"unknown site", "nowhere", s.operator, json, good, nil, 404, core.CodeNotFound, "nowhere"},
		{"unknown site, with a key", "nowhere", s.operator, json, good, map[string]string{"Idempotency-Key": "k-404"}, 404, core.CodeNotFound, "nowhere"},
		{"member", "fra1", s.member, json, good, nil, 403, core.CodePermissionDenied, ""},
		{"member, unknown site", "nowhere", s.member, json, good, nil, 403, core.CodePermissionDenied, ""},
		{"viewer", "fra1", s.viewer, json, good, nil, 403, core.CodePermissionDenied, ""},
		{"no token", "fra1", "", json, good, nil, 401, core.CodeUnauthenticated, ""},
	} {
		r := s.patchSite(t, c.id, c.token, c.contentType, c.body, c.hdr)
		require.Less(t, r.status, 500, "%s: %s", c.name, r.body)
		require.Equal(t, c.status, r.status, "%s: %s", c.name, r.body)
		e := r.errorBody(t)
		require.Equal(t, c.code, e.Code, "%s: %s", c.name, e.Message)
		require.Contains(t, e.Message, c.message, c.name)
	}
	one, listed := s.readSite(t, "fra1")
	require.Equal(t, siteJSON{ID: "fra1", Name: "Frankfurt 1", Version: 1}, one)
	require.Equal(t, one, listed)
	require.Zero(t, s.countSiteUpdated(t))
}
