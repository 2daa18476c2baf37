package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// Issue 13, item 3: ids with "/" (MIG instances, slots) travel in a path
// percent-encoded, and the route must see the decoded id.
func TestEscapedSlashInPathID(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	op := f.operator
	f.ok(t, http.StatusOK, http.MethodPut, "/v1/gpus/GPU-n1-1/mode", op, `{"mode":"mig","mig":["3g.40gb","2g.20gb","1g.10gb"]}`, nil)

	// The command sees the decoded atom id (and refuses it: quarantine is
	// for whole GPUs); before the fix the route was not even found.
	e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPost, "/v1/devices/GPU-n1-1%2Fmig-0/quarantine", op, nil, nil)
	require.Contains(t, e.Message, "GPU-n1-1/mig-0 is an atom of GPU GPU-n1-1")
	e = f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPost, "/v1/devices/GPU-n1-1%2fmig-0/unquarantine", op, nil, nil)
	require.Contains(t, e.Message, "GPU-n1-1/mig-0 is an atom")
	// An escape that is not a slash is decoded once, not twice.
	var dev map[string]any
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/devices/GPU%2Dn1-0/quarantine", op, nil, nil).decode(t, &dev)
	require.Equal(t, "GPU-n1-0", dev["id"])
}

// Item 5: field names match exactly, not case-insensitively.
func TestBindIsCaseSensitive(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	for _, body := range []string{
		`{"POOLID":"fra1-gpu","gpus":1,"start":"2030-01-01T00:00:00Z","end":"2030-01-02T00:00:00Z"}`,
		`{"poolId":"fra1-gpu","GPUs":1,"start":"2030-01-01T00:00:00Z","end":"2030-01-02T00:00:00Z"}`,
		`{"poolId":"fra1-gpu","gpus":1,"start":"2030-01-01T00:00:00Z","end":"2030-01-02T00:00:00Z","tolerations":[{"KEY":"a"}]}`,
	} {
		e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPost, "/v1/reservations", f.member, body, nil)
		require.Contains(t, e.Message, "unknown field", body)
	}
	e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPost, "/v1/tokens", f.operator,
		`{"tenant":"acme","identity":"ci","Role":"member"}`, nil)
	require.Contains(t, e.Message, `"Role"`)
}

// A key twice in one object is refused, at any depth: parsers disagree on
// which of the two wins (encoding/json took the last, so "gpus":1 then
// "gpus":100 asked for 100). The same key in two objects is fine.
func TestDuplicateKeysAreRefused(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	for body, key := range map[string]string{
		`{"poolId":"fra1-gpu","gpus":1,"gpus":100,"start":"2030-01-01T00:00:00Z","end":"2030-01-02T00:00:00Z"}`:                                   "gpus",
		`{"poolId":"fra1-gpu","gpus":1,"start":"2030-01-01T00:00:00Z","end":"2030-01-02T00:00:00Z","tolerations":[{"key":"a","key":"b"}]}`:        "key",
		`{"poolId":"fra1-gpu","gpus":1,"start":"2030-01-01T00:00:00Z","end":"2030-01-02T00:00:00Z","start":"2030-01-01T00:00:00Z"}`:               "start",
		`{"poolId":"fra1-gpu","gpus":1,"tolerations":[{"key":"a"}],"start":"2030-01-01T00:00:00Z","end":"2030-01-02T00:00:00Z","tolerations":[]}`: "tolerations",
	} {
		e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPost, "/v1/reservations", f.member, body, nil)
		require.Equal(t, fmt.Sprintf("field %q appears twice in one object", key), e.Message, body)
	}
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member,
		`{"poolId":"fra1-gpu","gpus":1,"start":"2030-01-01T00:00:00Z","end":"2030-01-02T00:00:00Z","tolerations":[{"key":"a"},{"key":"b"}]}`, nil)
}

// A body of the wrong JSON kind names the kind wanted.
func TestBodyOfTheWrongKind(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPost, "/v1/reservations", f.member, `[1,2]`, nil)
	require.Equal(t, "request body must be an object, not array", e.Message)
}

// Item 6: a non-JSON body is 415; a wrong method on a /v1 route is 405
// with Allow.
func TestUnsupportedMediaTypeAndMethodNotAllowed(t *testing.T) {
	t.Parallel()
	s := setup(t)
	req, err := http.NewRequest(http.MethodPost, s.url+"/v1/tokens", strings.NewReader(`{"tenant":"acme","identity":"a","role":"member"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", "Bearer "+s.operator)
	r := s.do(t, req)
	require.Equal(t, http.StatusUnsupportedMediaType, r.status, "body: %s", r.body)
	e := r.errorBody(t)
	require.Equal(t, core.CodeUnsupportedMediaType, e.Code)
	require.Contains(t, e.Message, "text/plain")

	// A compressed body is refused as such, not read as malformed JSON.
	req, err = http.NewRequest(http.MethodPost, s.url+"/v1/tokens", strings.NewReader("\x1f\x8b\x08\x00"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("Authorization", "Bearer "+s.operator)
	r = s.do(t, req)
	require.Equal(t, http.StatusUnsupportedMediaType, r.status, "body: %s", r.body)
	require.Contains(t, r.errorBody(t).Message, `content encoding "gzip"`)

	r = s.call(t, http.MethodDelete, "/v1/tokens", s.operator, nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.status, "body: %s", r.body)
	require.Equal(t, core.CodeMethodNotAllowed, r.errorBody(t).Code)
	require.Equal(t, http.MethodPost, r.header.Get("Allow"))
	r = s.call(t, http.MethodPut, "/v1/tokens/tok_x", s.operator, "{}")
	require.Equal(t, http.StatusMethodNotAllowed, r.status, "body: %s", r.body)
	require.Equal(t, "GET, DELETE", r.header.Get("Allow"))
	// An unknown /v1 path is still 404, and without a token still 401.
	r = s.call(t, http.MethodGet, "/v1/no-such-thing", s.operator, nil)
	require.Equal(t, http.StatusNotFound, r.status)
	r = s.call(t, http.MethodDelete, "/v1/tokens", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.status)
}

// Item 7: the webhook lists refuse a limit over their cap like every list.
func TestWebhookListLimitIsCapped(t *testing.T) {
	t.Parallel()
	s := setup(t, webhookRoutes)
	_, member := s.tokenFor(t, "acme", "alice", core.RoleMember)
	r := s.call(t, http.MethodGet, "/v1/webhook-endpoints?limit=200", member, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	for _, l := range []string{"201", "1000000", "99999999999"} {
		r = s.call(t, http.MethodGet, "/v1/webhook-endpoints?limit="+l, member, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "limit=%s body: %s", l, r.body)
		require.Equal(t, core.CodeInvalidArgument, r.errorBody(t).Code)
	}
}

// A query string that does not parse is a 400, not a request without the
// pair: net/url drops a pair with a semicolon or a malformed escape, and
// GET /v1/events then read `after` as absent and answered the first page.
func TestMalformedQueryString(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, 0)
	_, token := s.tokenFor(t, "tenant-a", "viewer@a", core.RoleViewer)
	s.appendEvent(t, "tenant-a", "x.created")
	for _, query := range []string{"after=%27;drop", "after=%zz", "limit=5;limit=6"} {
		r := s.call(t, http.MethodGet, "/v1/events?"+query, token, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", query, r.body)
		require.Contains(t, string(r.body), `"code":"INVALID_ARGUMENT"`, query)
		require.Contains(t, string(r.body), "malformed query string", query)
	}
	// A well-formed query still reaches the route (the event becomes
	// visible once the transactions of parallel tests have ended).
	s.waitListed(t, token, 1)
}

// A refusal that quotes a huge input does not send it back whole: the
// message is cut to 1 KiB.
func TestErrorMessagesAreCapped(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	id := "rsv_" + strings.Repeat("a", 5000)
	e := f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodPost, "/v1/reservations/"+id+"/release", f.member, nil, nil)
	require.LessOrEqual(t, len(e.Message), 1024+len("…"))
	require.True(t, strings.HasPrefix(e.Message, "reservation rsv_aaa"), e.Message[:40])
	require.True(t, strings.HasSuffix(e.Message, "…"), e.Message[len(e.Message)-20:])
}

// Bytes that are not UTF-8 in a path id or a query parameter are a 400
// that says so (PostgreSQL's character_not_in_repertoire covers a NUL and
// a bad encoding alike; it used to name only the NUL).
func TestInvalidUTF8InAnIDIsSaidToBe(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	for _, path := range []string{"/v1/devices/%ff%fe/quarantine"} {
		e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPost, path, f.operator, nil, nil)
		require.Contains(t, e.Message, "UTF-8", path)
	}
	for _, path := range []string{"/v1/tokens/%ff%fe", "/v1/tokens/a%00b"} {
		e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodGet, path, f.operator, nil, nil)
		require.Contains(t, e.Message, "UTF-8", path)
	}
}

// JSON text is UTF-8 (RFC 8259, 8.1). encoding/json replaces each byte
// that is not with U+FFFD and carries on, so "Frank\xfffurt" was stored
// as "Frank�furt" (and an instance's command, a token's identity the same
// way): the caller's text was changed without a word. A body that is not
// UTF-8 is now a 400 that says so, and nothing is written.
func TestInvalidUTF8InABodyIsRefused(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	for _, body := range []string{
		"{\"name\":\"Frank\xfffurt\"}",      // a byte that starts no sequence
		"{\"name\":\"Frankfurt \xe2\x82\"}", // a sequence cut short
		"{\"name\":\"Frankfurt\"}\xc0\xaf",  // an overlong encoding, after the value
	} {
		e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPatch, "/v1/sites/fra1", f.operator, body, nil)
		require.Equal(t, "request body is not valid UTF-8: JSON text must be UTF-8", e.Message, "%q", body)
	}
	// Text that is UTF-8, however far from ASCII, is taken as sent, and
	// it is the site's first change since creation: nothing was written
	// above.
	var site struct {
		Name    string
		Version int64
	}
	f.ok(t, http.StatusOK, http.MethodPatch, "/v1/sites/fra1", f.operator, `{"name":"Франкфурт 1"}`, nil).decode(t, &site)
	require.Equal(t, "Франкфурт 1", site.Name)
	require.EqualValues(t, 2, site.Version)
}

// A \uXXXX escape of half a UTF-16 surrogate pair is no character, and
// encoding/json decodes it as U+FFFD like a byte that is not UTF-8: the
// same silent rewrite, refused the same way. A whole pair, and a
// backslash that is itself escaped, are text like any other.
func TestLoneSurrogateEscapesAreRefused(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	for body, esc := range map[string]string{
		`{"name":"Frank\ud800furt"}`:    `\ud800`, // a high half alone
		`{"name":"Frankfurt \uDC00"}`:   `\uDC00`, // a low half alone
		`{"name":"\ud83d\ud83d\ude00"}`: `\ud83d`, // a high half, then a whole pair
		`{"name":"\\\\\ude00"}`:         `\ude00`, // an escaped backslash, then a low half
	} {
		e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPatch, "/v1/sites/fra1", f.operator, body, nil)
		require.Equal(t, "request body has the escape "+esc+", half of a UTF-16 surrogate pair without its other half: it is no character",
			e.Message, body)
	}
	var site struct {
		Name    string
		Version int64
	}
	f.ok(t, http.StatusOK, http.MethodPatch, "/v1/sites/fra1", f.operator, `{"name":"Frankfurt \ud83d\ude00 \\ud800"}`, nil).decode(t, &site)
	require.Equal(t, `Frankfurt 😀 \ud800`, site.Name)
	require.EqualValues(t, 2, site.Version, "the refusals above wrote nothing")
}

// The body is read as UTF-8 whatever charset its Content-Type names, so
// `application/json; charset=iso-8859-1` with the bytes C3 A9 (the two
// characters "Ã©" in Latin-1) was stored as "é", one character the caller
// never sent: the silent rewrite TestInvalidUTF8InABodyIsRefused refuses,
// by another road. JSON text is UTF-8 (RFC 8259, 8.1) and has no charset
// parameter (its media type defines none); a charset other than UTF-8 is
// now 415 UNSUPPORTED_MEDIA_TYPE and nothing is written. utf-8, in any
// case and quoted or not, is taken as sent.
func TestBodyInAnotherCharsetIsRefused(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	send := func(ct string) response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPatch, f.url+"/v1/sites/fra1", strings.NewReader("{\"name\":\"Caf\xc3\xa9\"}"))
		require.NoError(t, err)
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+f.operator)
		return f.do(t, req)
	}
	for _, ct := range []string{
		"application/json; charset=iso-8859-1",
		"application/json; charset=latin1",
		"application/json; charset=windows-1252",
		"application/json; charset=utf-16",
		"application/merge-patch+json; charset=us-ascii",
	} {
		r := send(ct)
		require.Equal(t, http.StatusUnsupportedMediaType, r.status, "%s: %s", ct, r.body)
		e := r.errorBody(t)
		require.Equal(t, core.CodeUnsupportedMediaType, e.Code, ct)
		require.Contains(t, e.Message, "JSON is UTF-8", ct)
	}
	for i, ct := range []string{"application/json; charset=utf-8", `application/json; charset="UTF-8"`, "application/json"} {
		var site struct {
			Name    string
			Version int64
		}
		r := send(ct)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", ct, r.body)
		r.decode(t, &site)
		require.Equal(t, "Café", site.Name, ct)
		if i == 0 {
			require.EqualValues(t, 2, site.Version, "the refusals above wrote nothing")
		}
	}
}

// A body sent with Content-Type twice is refused, whichever comes first:
// the header is one value (RFC 9110, 8.3), and a client or proxy that
// sends two means one of them to be ignored, which the API cannot guess.
// Before, only the first was read, so `application/json` then
// `text/plain` created the site and the reverse order was 415.
func TestTwoContentTypesAreRefused(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	send := func(types ...string) response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, f.url+"/v1/sites", strings.NewReader(`{"id":"ber1","name":"Berlin 1"}`))
		require.NoError(t, err)
		req.Header["Content-Type"] = types
		req.Header.Set("Authorization", "Bearer "+f.operator)
		return f.do(t, req)
	}
	for _, types := range [][]string{
		{"application/json", "text/plain"},
		{"text/plain", "application/json"},
		{"application/json", "application/json"},
	} {
		r := send(types...)
		require.Equal(t, http.StatusBadRequest, r.status, "%q: %s", types, r.body)
		e := r.errorBody(t)
		require.Equal(t, core.CodeInvalidArgument, e.Code, "%q", types)
		require.Equal(t, "Content-Type is given 2 times; give it once", e.Message)
	}
	var n int
	require.NoError(t, f.pg.Pool.QueryRow(t.Context(), "SELECT count(*) FROM sites WHERE id = 'ber1'").Scan(&n))
	require.Zero(t, n, "a refused request created the site")
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/sites", f.operator, `{"id":"ber1","name":"Berlin 1"}`, nil)
}

// A body is JSON under application/json or any type with the +json
// suffix (RFC 6839), as docs/openapi.yaml says; a type that only looks
// like it is 415.
func TestJSONSuffixTypesAreJSON(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	send := func(ct string) response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPatch, f.url+"/v1/sites/fra1", strings.NewReader(`{"name":"`+ct+`"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+f.operator)
		return f.do(t, req)
	}
	for _, ct := range []string{"application/merge-patch+json", "application/vnd.acme+json", "APPLICATION/JSON"} {
		r := send(ct)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", ct, r.body)
	}
	for _, ct := range []string{"application/jsonx", "application/json+xml", "text/json+plain; x", "application/json, text/plain", "*/*"} {
		r := send(ct)
		require.Equal(t, http.StatusUnsupportedMediaType, r.status, "%s: %s", ct, r.body)
		require.Equal(t, core.CodeUnsupportedMediaType, r.errorBody(t).Code, ct)
	}
}
