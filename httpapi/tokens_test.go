package httpapi_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// tokenJSON is a token as the API returns it.
type tokenJSON struct {
	ID        string     `json:"id"`
	Tenant    string     `json:"tenant"`
	Identity  string     `json:"identity"`
	Role      core.Role  `json:"role"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt"`
	ExpiresAt *time.Time `json:"expiresAt"`
	Token     string     `json:"token"`
}

func TestCreateTokenAndWhoami(t *testing.T) {
	t.Parallel()
	s := setup(t)

	r := s.call(t, http.MethodPost, "/v1/tokens", s.operator,
		map[string]string{"tenant": "acme", "identity": "alice@acme", "role": "member"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, "no-store", r.header.Get("Cache-Control"))
	var created tokenJSON
	r.decode(t, &created)
	require.Regexp(t, regexp.MustCompile(`^bc_[A-Za-z0-9_-]{43}$`), created.Token)
	require.Equal(t, "acme", created.Tenant)
	require.Equal(t, "alice@acme", created.Identity)
	require.Equal(t, core.RoleMember, created.Role)
	require.True(t, created.CreatedAt.Equal(s.pg.Now(t)), "created at business time")
	require.Nil(t, created.RevokedAt)

	r = s.call(t, http.MethodGet, "/v1/whoami", created.Token, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.JSONEq(t, `{"tokenId":"`+created.ID+`","tenant":"acme","identity":"alice@acme","role":"member"}`, string(r.body))

	// The secret is never shown again.
	r = s.call(t, http.MethodGet, "/v1/tokens/"+created.ID, s.operator, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.NotContains(t, string(r.body), created.Token)
	require.NotContains(t, string(r.body), `"token"`)
}

func TestCreateTokenRejectsBadInput(t *testing.T) {
	t.Parallel()
	s := setup(t)
	for name, tc := range map[string]struct {
		body    string
		mention string
	}{
		"bad tenant":     {`{"tenant":"Acme Corp","identity":"a","role":"member"}`, "tenant"},
		"missing tenant": {`{"identity":"a","role":"member"}`, "tenant"},
		"empty identity": {`{"tenant":"acme","identity":" ","role":"member"}`, "identity"},
		"bidi identity":  {`{"tenant":"acme","identity":"a\u202e","role":"member"}`, "identity"},
		"bad role":       {`{"tenant":"acme","identity":"a","role":"admin"}`, "role"},
		"wrong type":     {`{"tenant":"acme","identity":"a","role":7}`, `"role"`},
		"unknown field":  {`{"tenant":"acme","identity":"a","role":"member","scope":"all"}`, `"scope"`},
		"trailing data":  {`{"tenant":"acme","identity":"a","role":"member"} {}`, "after"},
		"malformed JSON": {`{"tenant":"acme",`, "JSON"},
		"empty body":     {``, "required"},
		"null body":      {`null`, "null"},
		"array body":     {`[]`, "object"},
	} {
		t.Run(name, func(t *testing.T) {
			r := s.call(t, http.MethodPost, "/v1/tokens", s.operator, tc.body)
			require.Equal(t, http.StatusBadRequest, r.status, "body: %s", r.body)
			e := r.errorBody(t)
			require.Equal(t, core.CodeInvalidArgument, e.Code)
			require.Contains(t, e.Message, tc.mention)
		})
	}
	t.Run("wrong content type", func(t *testing.T) {
		const body = `{"tenant":"acme","identity":"a","role":"member"}`
		r := s.call(t, http.MethodPost, "/v1/tokens", s.operator, body)
		require.Equal(t, http.StatusCreated, r.status, "control: the same body as JSON is accepted")
		req, err := http.NewRequest(http.MethodPost, s.url+"/v1/tokens", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set("Authorization", "Bearer "+s.operator)
		r = s.do(t, req)
		require.Equal(t, http.StatusUnsupportedMediaType, r.status)
		e := r.errorBody(t)
		require.Equal(t, core.CodeUnsupportedMediaType, e.Code)
		require.Contains(t, e.Message, "text/plain")
	})
}

func TestTokenRoutesEnforceRoles(t *testing.T) {
	t.Parallel()
	s := setup(t)
	_, member := s.tokenFor(t, "acme", "alice", core.RoleMember)
	victimID, _ := s.tokenFor(t, "acme", "bob", core.RoleViewer)

	r := s.call(t, http.MethodPost, "/v1/tokens", member,
		map[string]string{"tenant": "acme", "identity": "mallory", "role": "operator"})
	require.Equal(t, http.StatusForbidden, r.status)
	require.Equal(t, core.CodePermissionDenied, r.errorBody(t).Code)

	r = s.call(t, http.MethodDelete, "/v1/tokens/"+victimID, member, nil)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Equal(t, core.CodePermissionDenied, r.errorBody(t).Code)

	// Refused calls changed nothing.
	r = s.call(t, http.MethodGet, "/v1/tokens/"+victimID, s.operator, nil)
	require.Equal(t, http.StatusOK, r.status)
	var tok tokenJSON
	r.decode(t, &tok)
	require.Nil(t, tok.RevokedAt)
}

func TestTokenOfAnotherTenantIsNotFound(t *testing.T) {
	t.Parallel()
	s := setup(t)
	acmeID, acme := s.tokenFor(t, "acme", "alice", core.RoleMember)
	_, globex := s.tokenFor(t, "globex", "hank", core.RoleMember)

	// Tenant B cannot tell tenant A's token from one that does not exist.
	theirs := s.call(t, http.MethodGet, "/v1/tokens/"+acmeID, globex, nil)
	require.Equal(t, http.StatusNotFound, theirs.status)
	require.Equal(t, core.CodeNotFound, theirs.errorBody(t).Code)
	missing := s.call(t, http.MethodGet, "/v1/tokens/tok_000000000000000000000000", globex, nil)
	require.Equal(t, http.StatusNotFound, missing.status)
	require.Equal(t,
		regexp.MustCompile(`tok_[0-9a-f]+`).ReplaceAllString(theirs.errorBody(t).Message, "ID"),
		regexp.MustCompile(`tok_[0-9a-f]+`).ReplaceAllString(missing.errorBody(t).Message, "ID"))

	// Its own tenant and the operator see it.
	for _, token := range []string{acme, s.operator} {
		r := s.call(t, http.MethodGet, "/v1/tokens/"+acmeID, token, nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		var tok tokenJSON
		r.decode(t, &tok)
		require.Equal(t, acmeID, tok.ID)
		require.Equal(t, "acme", tok.Tenant)
	}
}

func TestRevokeToken(t *testing.T) {
	t.Parallel()
	s := setup(t)
	id, secret := s.tokenFor(t, "acme", "ci", core.RoleMember)
	require.Equal(t, http.StatusOK, s.call(t, http.MethodGet, "/v1/whoami", secret, nil).status)

	r := s.call(t, http.MethodDelete, "/v1/tokens/"+id, s.operator, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var tok tokenJSON
	r.decode(t, &tok)
	require.Equal(t, id, tok.ID)
	require.NotNil(t, tok.RevokedAt)

	r = s.call(t, http.MethodGet, "/v1/whoami", secret, nil)
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Equal(t, core.CodeUnauthenticated, r.errorBody(t).Code)

	// Revoking again is harmless and changes nothing.
	r = s.call(t, http.MethodDelete, "/v1/tokens/"+id, s.operator, nil)
	require.Equal(t, http.StatusOK, r.status)
	var again tokenJSON
	r.decode(t, &again)
	require.True(t, tok.RevokedAt.Equal(*again.RevokedAt))

	r = s.call(t, http.MethodDelete, "/v1/tokens/tok_nope", s.operator, nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, core.CodeNotFound, r.errorBody(t).Code)
}

// A token issued with expiresAt authenticates until then (business time)
// and is 401 from then on, like a revoked one, while its metadata shows
// the expiry; an expiry not in the future, or not a time, or of a year no
// answer can show (past 9999 in UTC, though RFC 3339 with its offset), is
// 400 and issues nothing.
func TestTokenExpiresAtItsExpiry(t *testing.T) {
	t.Parallel()
	s := setup(t)
	now := s.pg.Now(t)
	for name, at := range map[string]string{
		"now":                  now.Format(time.RFC3339Nano),
		"past":                 now.Add(-time.Hour).Format(time.RFC3339Nano),
		"not a time":           "tomorrow",
		"year 10000 in UTC":    "9999-12-31T23:59:59-23:59",
		"year 10000 by a hair": "9999-12-31T23:59:59.5-00:01",
	} {
		r := s.call(t, http.MethodPost, "/v1/tokens", s.operator,
			map[string]string{"tenant": "expiry", "identity": "ci", "role": "member", "expiresAt": at})
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", name, r.body)
		e := r.errorBody(t)
		require.Equal(t, core.CodeInvalidArgument, e.Code, name)
		require.Contains(t, e.Message, "expiresAt", name)
	}
	var n int
	require.NoError(t, s.pg.Pool.QueryRow(t.Context(), "SELECT count(*) FROM api_tokens WHERE tenant_id = 'expiry'").Scan(&n))
	require.Zero(t, n, "nothing issued by a refused request")

	expiry := now.Add(time.Hour)
	r := s.call(t, http.MethodPost, "/v1/tokens", s.operator,
		map[string]string{"tenant": "expiry", "identity": "ci", "role": "member", "expiresAt": expiry.Format(time.RFC3339Nano)})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var created tokenJSON
	r.decode(t, &created)
	require.NotNil(t, created.ExpiresAt)
	require.True(t, created.ExpiresAt.Equal(expiry), "expiresAt %s", created.ExpiresAt)

	var got tokenJSON
	s.mustCall(t, http.StatusOK, http.MethodGet, "/v1/tokens/"+created.ID, s.operator, nil, &got)
	require.NotNil(t, got.ExpiresAt)
	require.True(t, got.ExpiresAt.Equal(expiry), "its metadata shows the expiry")

	s.pg.AdvanceSimClock(t, time.Hour-time.Second)
	r = s.call(t, http.MethodGet, "/v1/whoami", created.Token, nil)
	require.Equal(t, http.StatusOK, r.status, "a second before its expiry: %s", r.body)
	s.pg.AdvanceSimClock(t, time.Second)
	r = s.call(t, http.MethodGet, "/v1/whoami", created.Token, nil)
	require.Equal(t, http.StatusUnauthorized, r.status, "at its expiry: %s", r.body)
	require.Equal(t, core.CodeUnauthenticated, r.errorBody(t).Code)
	r = s.call(t, http.MethodGet, "/v1/reservations", created.Token, nil)
	require.Equal(t, http.StatusUnauthorized, r.status, "every route: %s", r.body)
}

// An operator token with an expiry issues only tokens that expire no later
// than itself: otherwise a leaked automation token, given an expiry so that
// a leak is bounded, could mint an operator token that never expires, and
// its expiry would bound nothing.
func TestTokenCannotOutliveTheTokenThatIssuesIt(t *testing.T) {
	t.Parallel()
	s := setup(t)
	now := s.pg.Now(t)
	issuerExpiry := now.Add(time.Hour)
	r := s.call(t, http.MethodPost, "/v1/tokens", s.operator, map[string]string{
		"tenant": "ops", "identity": "ci@ops", "role": "operator", "expiresAt": issuerExpiry.Format(time.RFC3339Nano)})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var issuer tokenJSON
	r.decode(t, &issuer)

	requireExpiriesRefused(t, s, issuer.Token, "outlive", core.CodeInvalidArgument, "expiresAt", issuerExpiry, map[string]string{
		"no expiry":       "",
		"after it":        issuerExpiry.Add(time.Second).Format(time.RFC3339Nano),
		"a year from now": now.AddDate(1, 0, 0).Format(time.RFC3339Nano),
	})

	for name, at := range map[string]time.Time{"before it": now.Add(time.Minute), "with it": issuerExpiry} {
		r := s.call(t, http.MethodPost, "/v1/tokens", issuer.Token, map[string]string{
			"tenant": "outlive", "identity": "short", "role": "member", "expiresAt": at.Format(time.RFC3339Nano)})
		require.Equal(t, http.StatusCreated, r.status, "%s: %s", name, r.body)
	}
	// A token without an expiry still issues whatever it likes.
	s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator,
		map[string]string{"tenant": "outlive", "identity": "forever", "role": "member"}, nil)
}

// requireExpiriesRefused creates, with issuer, a token of tenant for each
// expiry of expiries ("" for none) and requires each refused with 400 and
// code, its message naming mention and the latest expiry allowed; and no
// token of tenant issued by any of them.
func requireExpiriesRefused(t *testing.T, s *testServer, issuer, tenant string, code core.Code, mention string,
	latest time.Time, expiries map[string]string) {
	t.Helper()
	for name, at := range expiries {
		body := map[string]string{"tenant": tenant, "identity": "forever", "role": "operator"}
		if at != "" {
			body["expiresAt"] = at
		}
		r := s.call(t, http.MethodPost, "/v1/tokens", issuer, body)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", name, r.body)
		e := r.errorBody(t)
		require.Equal(t, code, e.Code, name)
		require.Contains(t, e.Message, mention, name)
		require.Contains(t, e.Message, latest.UTC().Format(time.RFC3339), "%s: names the latest expiry allowed", name)
	}
	var n int
	require.NoError(t, s.pg.Pool.QueryRow(t.Context(), "SELECT count(*) FROM api_tokens WHERE tenant_id = $1", tenant).Scan(&n))
	require.Zero(t, n, "nothing issued by a refused request")
}

// A time of a year past 9999 in UTC, which an RFC 3339 offset can write
// (9999-12-31T23:59:59-23:59), is 400 where a query takes a time, as in a
// body: the answer that shows it back could not be written (500).
func TestQueryTimeOfAYearNoAnswerCanShowIsRefused(t *testing.T) {
	t.Parallel()
	s := setupClasses(t)
	// A write after the node's, so that the read model has the device.
	var quota struct{ Position string }
	s.mustCall(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/gpu", s.operator, map[string]int{"max": 3}, &quota)
	s.catchUp(t, quota.Position)
	path := "/v1/devices/GPU-n1-0/holders?at="
	s.mustCall(t, http.StatusOK, http.MethodGet, path+url.QueryEscape("9999-12-31T23:59:59Z"), s.operator, nil, nil)
	for _, at := range []string{"9999-12-31T23:59:59-23:59", "0000-01-01T00:00:00+01:00"} {
		r := s.call(t, http.MethodGet, path+url.QueryEscape(at), s.operator, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", at, r.body)
		require.Equal(t, core.CodeInvalidArgument, r.errorBody(t).Code, at)
	}
}
