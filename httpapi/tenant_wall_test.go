package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// TestTenantWallBeyondThePath: the doors TestCrossTenantMatrix does not
// open — it puts another tenant's ids into each route's path. Here tenant
// evil, with a member token, over real HTTP, hands the server what it
// copied of acme's: acme's ids in query parameters (?reservationId=,
// ?reservation=, ?subject=), acme's Idempotency-Keys with acme's very
// bodies, acme's pagination cursors, acme's event positions (?after=,
// Last-Event-ID, minPosition) and acme's versions in If-Match. Each one
// must:
//
//   - hold none of acme's ids, secrets, identities or event ids in the
//     answer (unless evil's own request held it), and any object in a 2xx
//     belongs to evil;
//   - where it names one of acme's objects, answer exactly as the same
//     request naming an object that does not exist (status, code and
//     message shape), so that nothing says acme's object exists;
//   - change nothing of acme's (every row with tenant_id = acme is the same
//     afterwards).
func TestTenantWallBeyondThePath(t *testing.T) {
	t.Parallel()
	s := newAPIServer(t, 2*time.Second)
	s.runBroker(t)
	srv := httptest.NewServer(s.e)
	t.Cleanup(srv.Close)
	xtFleet(t, s, "acme", "evil")
	now := s.pg.Now(t)
	acme := xtMakeTenant(t, s, "acme", "alice@acme", "vic@acme", now)
	evil := xtMakeTenant(t, s, "evil", "mallory@evil", "eve@evil", now)

	h := wallHTTP{t: t, url: srv.URL}
	far := now.Add(24 * time.Hour).Format(time.RFC3339)
	soon := now.Add(3 * time.Hour).Format(time.RFC3339)

	// acme's keyed writes: evil sends the same keys, with the same bodies.
	keyed := []struct {
		path, key, body string
		// evilOwns: evil may do this on its own (the body names nothing of
		// acme's), so a fresh 201 of evil's own is the right answer.
		evilOwns bool
	}{
		{"/v1/reservations", "k-rsv", fmt.Sprintf(`{"poolId":"fra1-gpu","vcpu":1,"start":%q,"end":%q}`, now.Format(time.RFC3339), soon), true},
		{"/v1/webhook-endpoints", "k-ep", `{"url":"https://hooks.shared.example/second"}`, true},
		{"/v1/instances", "k-inst", fmt.Sprintf(`{"reservationId":%q,"image":"registry.acme.example/second:1"}`, acme.reservation), false},
		{"/v1/reservations/" + acme.reservation + "/extend", "k-ext", fmt.Sprintf(`{"end":%q}`, far), false},
		{"/v1/commands", acme.commandKey, fmt.Sprintf(`{"nodeId":"n1","allocationId":%q,"kind":"exec","payload":{"script":"nvidia-smi"}}`, acme.allocation), false},
	}
	for _, k := range keyed {
		if k.path == "/v1/commands" {
			continue // acme sent it in xtMakeTenant
		}
		r := h.do(http.MethodPost, k.path, acme.member, k.body, map[string]string{"Idempotency-Key": k.key})
		require.Less(t, r.status, 300, "acme's own %s: %s", k.path, r.body)
	}
	// More of acme's, so that its lists have a second page.
	var tok struct{ ID, Token string }
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator,
		map[string]string{"tenant": "acme", "identity": "bob@acme", "role": "member"}, &tok)
	acmeWrite := h.do(http.MethodPost, "/v1/reservations/"+acme.reservation+"/release", acme.member, "", nil)
	require.Equal(t, http.StatusOK, acmeWrite.status, "%s", acmeWrite.body)
	var released struct{ Position string }
	require.NoError(t, json.Unmarshal(acmeWrite.body, &released))
	require.NotEmpty(t, released.Position)
	s.catchUp(t)

	secrets := wallSecrets(t, s, acme)
	secrets = append(secrets, tok.ID, tok.Token, "bob@acme")

	// acme's cursors, each from the first page of one of acme's lists.
	acmeCursor := func(path string) string {
		t.Helper()
		r := h.do(http.MethodGet, path, acme.member, "", nil)
		require.Equal(t, http.StatusOK, r.status, "acme's %s: %s", path, r.body)
		var page struct{ NextCursor string }
		require.NoError(t, json.Unmarshal(r.body, &page))
		require.NotEmpty(t, page.NextCursor, "acme's %s has a second page", path)
		return page.NextCursor
	}
	// The position of acme's first event, as acme's stream and a page of
	// one item give it.
	acmeEvent := acmeCursor("/v1/events?limit=1")

	dbBefore := xtTenantRows(t, s, "acme")
	bBefore := xtReadAsB(t, s, acme)

	type door struct {
		name          string
		method, path  string
		body          string
		header        map[string]string
		unknownPath   string            // the same request naming an object that does not exist ("" : none)
		unknownHeader map[string]string // its headers, when they differ
		unknownBody   string            // its body, when it differs
		token         string            // evil's member token when ""
		named         []string          // acme's ids the request holds
		// fresh: a 2xx must be a new object of evil's, not one of acme's.
		fresh bool
		// refused: the door must not answer 2xx.
		refused bool
	}
	unknownRsv, unknownEP, unknownAlc := wallUnknown(acme.reservation), wallUnknown(acme.endpoint), wallUnknown(acme.allocation)
	var doors []door
	// A second member of evil's, whose keys are all fresh.
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator,
		map[string]string{"tenant": "evil", "identity": "trudy@evil", "role": "member"}, &tok)
	evil2 := tok.Token
	for _, k := range keyed {
		d := door{name: "Idempotency-Key " + k.key + " with acme's body", method: http.MethodPost, path: k.path, body: k.body,
			header: map[string]string{"Idempotency-Key": k.key}, fresh: k.evilOwns, refused: !k.evilOwns}
		if !k.evilOwns {
			// The same request naming nothing that exists, under a key
			// of evil's own.
			d.named = []string{acme.reservation, acme.allocation}
			d.unknownPath = strings.ReplaceAll(k.path, acme.reservation, unknownRsv)
			d.unknownBody = strings.ReplaceAll(strings.ReplaceAll(k.body, acme.reservation, unknownRsv), acme.allocation, unknownAlc)
			d.unknownHeader = map[string]string{"Idempotency-Key": k.key + "-unknown"}
		}
		doors = append(doors, d)
		if k.evilOwns {
			// The same key with another body: had the key been acme's,
			// this would be IDEMPOTENCY_KEY_REUSED, a yes to "did acme
			// use this key".
			body := strings.Replace(strings.Replace(k.body, `"vcpu":1`, `"vcpu":2`, 1), "/second", "/other", 1)
			doors = append(doors, door{name: "Idempotency-Key " + k.key + " with another body", method: http.MethodPost,
				path: k.path, body: body, header: map[string]string{"Idempotency-Key": k.key}, fresh: true, token: evil2})
		}
	}
	for _, c := range []struct{ name, acmePath, evilPath string }{
		{"reservations", "/v1/reservations?limit=1", "/v1/reservations?limit=1&cursor="},
		{"usage windows", "/v1/usage-windows?limit=1", "/v1/usage-windows?limit=1&cursor="},
		{"webhook endpoints", "/v1/webhook-endpoints?limit=1", "/v1/webhook-endpoints?limit=1&cursor="},
		{"tokens", "/v1/tokens?limit=1", "/v1/tokens?limit=1&cursor="},
		{"instances", "/v1/instances?limit=1&reservationId=" + acme.reservation, "/v1/instances?limit=1&reservationId=" + evil.reservation + "&cursor="},
		{"events", "/v1/events?limit=1", "/v1/events?limit=1&after="},
	} {
		cur := acmeCursor(c.acmePath)
		doors = append(doors, door{name: "acme's cursor of " + c.name, method: http.MethodGet, path: c.evilPath + url.QueryEscape(cur)})
	}
	doors = append(doors,
		door{name: "?reservationId= acme's", method: http.MethodGet, path: "/v1/instances?reservationId=" + acme.reservation,
			unknownPath: "/v1/instances?reservationId=" + unknownRsv, named: []string{acme.reservation}, refused: true},
		door{name: "?reservation= acme's", method: http.MethodGet, path: "/v1/usage-windows?reservation=" + acme.reservation,
			unknownPath: "/v1/usage-windows?reservation=" + unknownRsv, named: []string{acme.reservation}},
		door{name: "?subject= acme's", method: http.MethodGet, path: "/v1/events?subject=reservations/" + acme.reservation,
			unknownPath: "/v1/events?subject=reservations/" + unknownRsv, named: []string{acme.reservation}},
		door{name: "?subject= acme's endpoint, ?types=", method: http.MethodGet,
			path:        "/v1/events?types=webhook_endpoint.created&subject=webhook-endpoints/" + acme.endpoint,
			unknownPath: "/v1/events?types=webhook_endpoint.created&subject=webhook-endpoints/" + unknownEP, named: []string{acme.endpoint}},
		door{name: "?after= acme's event", method: http.MethodGet, path: "/v1/events?limit=500&after=" + url.QueryEscape(acmeEvent)},
		door{name: "minPosition of acme's write", method: http.MethodGet,
			path: "/v1/reservations/" + evil.reservation + "?minPosition=" + url.QueryEscape(released.Position)},
		door{name: "minPosition of acme's write, list", method: http.MethodGet,
			path: "/v1/reservations?tenant=evil&minPosition=" + url.QueryEscape(released.Position)},
	)
	// acme's versions in If-Match on acme's objects: a version check run
	// before the tenant's would answer CONFLICT for acme's object and
	// NOT_FOUND for one that does not exist.
	for _, v := range []string{"1", "2", "3", `"2"`, "99"} {
		for _, w := range []struct{ method, path, body, unknown string }{
			{http.MethodPost, "/v1/reservations/" + acme.reservation + "/extend", fmt.Sprintf(`{"end":%q}`, far), "/v1/reservations/" + unknownRsv + "/extend"},
			{http.MethodPost, "/v1/reservations/" + acme.reservation + "/release", "", "/v1/reservations/" + unknownRsv + "/release"},
			{http.MethodPost, "/v1/reservations/" + acme.reservation + "/cancel", "", "/v1/reservations/" + unknownRsv + "/cancel"},
			{http.MethodPatch, "/v1/webhook-endpoints/" + acme.endpoint, `{"enabled":false}`, "/v1/webhook-endpoints/" + unknownEP},
		} {
			named := []string{acme.reservation}
			if strings.Contains(w.path, "webhook") {
				named = []string{acme.endpoint}
			}
			doors = append(doors, door{name: "If-Match " + v, method: w.method, path: w.path, body: w.body,
				header: map[string]string{"If-Match": v}, unknownPath: w.unknown, named: named, refused: true})
		}
	}

	for _, d := range doors {
		token := d.token
		if token == "" {
			token = evil.member
		}
		r := h.do(d.method, d.path, token, d.body, d.header)
		what := fmt.Sprintf("%s: %s %s", d.name, d.method, d.path)
		t.Logf("%s -> %d %s", what, r.status, core.Clip(string(r.body), 200))
		sent := d.path + " " + d.body
		for _, v := range d.header {
			sent += " " + v
		}
		require.Less(t, r.status, 500, "%s: %s", what, r.body)
		for _, secret := range secrets {
			if bytes.Contains(r.body, []byte(secret)) && !strings.Contains(sent, secret) {
				t.Errorf("LEAK %s: the answer holds acme's %q: %s", what, secret, r.body)
			}
		}
		if r.status < 300 {
			for _, tn := range xtTenantFields(r.body) {
				if tn != evil.name {
					t.Errorf("LEAK %s: %d with an object of tenant %q: %s", what, r.status, tn, r.body)
				}
			}
		}
		if d.refused && r.status < 300 {
			t.Errorf("%s: %d on acme's object: %s", what, r.status, r.body)
		}
		if d.fresh && r.status != http.StatusCreated {
			t.Errorf("%s: want evil's own new object (201), got %d %s", what, r.status, r.body)
		}
		if d.unknownPath != "" {
			hdr := d.header
			if d.unknownHeader != nil {
				hdr = d.unknownHeader
			}
			body := d.body
			if d.unknownBody != "" {
				body = d.unknownBody
			}
			u := h.do(d.method, d.unknownPath, token, body, hdr)
			res := apiResult{status: r.status, body: r.body}
			ures := apiResult{status: u.status, body: u.body}
			unknownOf := func(id string) string {
				return map[string]string{acme.reservation: unknownRsv, acme.endpoint: unknownEP, acme.allocation: unknownAlc}[id]
			}
			if u.status != r.status || xtCode(ures) != xtCode(res) ||
				xtMessage(res, d.named, nil) != xtMessage(ures, d.named, unknownOf) {
				t.Errorf("ORACLE %s: acme's id answers %d %s, an unknown id %d %s", what, r.status, r.body, u.status, u.body)
			}
			if r.status < 300 && !bytes.Equal(wallItems(t, r.body), wallItems(t, u.body)) {
				t.Errorf("ORACLE %s: acme's id lists %s, an unknown id %s", what, r.body, u.body)
			}
		}
	}

	// The stream: resumed from acme's first event (Last-Event-ID, and
	// ?after=) up to evil's newest event, which comes after every one of
	// acme's; and filtered on acme's reservation, which reads as a subject
	// nothing was written about: caught up (its first heartbeat) with no
	// event at all.
	var evilNewest string
	after := ""
	for {
		var page struct {
			Items      []struct{ ID string } `json:"items"`
			NextCursor string                `json:"nextCursor"`
		}
		r := h.do(http.MethodGet, "/v1/events?limit=500&after="+url.QueryEscape(after), evil.member, "", nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.NoError(t, json.Unmarshal(r.body, &page))
		if len(page.Items) == 0 {
			break
		}
		evilNewest = page.Items[len(page.Items)-1].ID
		after = page.NextCursor
	}
	require.NotEmpty(t, evilNewest)
	for _, st := range []struct {
		name, path string
		header     map[string]string
		until      string
	}{
		{"Last-Event-ID acme's", "/v1/events/stream", map[string]string{"Last-Event-ID": acmeEvent}, evilNewest},
		{"?after= acme's", "/v1/events/stream?after=" + url.QueryEscape(acmeEvent), nil, evilNewest},
		{"?subject= acme's", "/v1/events/stream?after=&subject=reservations/" + acme.reservation, nil, ": heartbeat"},
		{"?subject= acme's, ?types=", "/v1/events/stream?after=&types=reservation.booked,reservation.released&subject=reservations/" + acme.reservation, nil, ": heartbeat"},
	} {
		body, status := h.stream(st.path, evil.member, st.header, st.until)
		require.Equal(t, http.StatusOK, status, "%s: %s", st.name, body)
		for _, secret := range secrets {
			if strings.Contains(body, secret) && !strings.Contains(st.path+fmt.Sprint(st.header), secret) {
				t.Errorf("LEAK stream %s: holds acme's %q: %s", st.name, secret, body)
			}
		}
		for line := range strings.SplitSeq(body, "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var e core.Event
				require.NoError(t, json.Unmarshal([]byte(data), &e))
				if e.TenantID != evil.name || st.until != evilNewest {
					t.Errorf("LEAK stream %s: event %s of %q", st.name, e.ID, e.TenantID)
				}
			}
		}
	}

	require.Equal(t, dbBefore, xtTenantRows(t, s, "acme"), "rows of tenant acme changed")
	bAfter := xtReadAsB(t, s, acme)
	for k, v := range bBefore {
		require.JSONEq(t, v, bAfter[k], "acme's %s changed", k)
	}
}

// wallSecrets is everything of tenant x an answer to another tenant must
// not hold: its ids, secrets, identities, hosts and event ids.
func wallSecrets(t *testing.T, s *apiServer, x xtTenant) []string {
	t.Helper()
	out := []string{x.member, x.viewer, x.memberID, x.viewerID, x.memberWho, x.viewerWho,
		x.reservation, x.allocation, x.endpoint, x.endpointSK, x.command, x.commandKey, x.instance,
		"hooks." + x.name + ".example", "registry." + x.name + ".example"}
	for _, q := range []string{
		"SELECT id::text FROM outbox WHERE tenant_id = $1",
		"SELECT id FROM reservations WHERE tenant_id = $1",
		"SELECT id FROM webhook_endpoints WHERE tenant_id = $1",
		"SELECT id FROM instances WHERE tenant_id = $1",
	} {
		rows, err := s.pg.Pool.Query(context.Background(), q, x.name)
		require.NoError(t, err)
		for rows.Next() {
			var id string
			require.NoError(t, rows.Scan(&id))
			out = append(out, id)
		}
		require.NoError(t, rows.Err())
	}
	return out
}

// wallUnknown is an id of the same shape as id that names nothing: its
// random part all zeros but the last digit.
func wallUnknown(id string) string {
	return regexp.MustCompile(`[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}|[0-9a-f]{16,}$`).
		ReplaceAllStringFunc(id, func(m string) string { return strings.Repeat("0", len(m)-1) + "1" })
}

// wallItems is a page's items, "" for a body that is no page.
func wallItems(t *testing.T, body []byte) []byte {
	var page struct {
		Items json.RawMessage `json:"items"`
	}
	if json.Unmarshal(body, &page) != nil {
		return nil
	}
	return page.Items
}

// wallHTTP sends requests to a real server over HTTP.
type wallHTTP struct {
	t   *testing.T
	url string
}

func (h wallHTTP) request(ctx context.Context, method, path, token, body string, header map[string]string) *http.Response {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.url+path, rd)
	require.NoError(h.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err, "%s %s", method, path)
	return resp
}

// do sends one request and reads its answer.
func (h wallHTTP) do(method, path, token, body string, header map[string]string) apiResult {
	h.t.Helper()
	resp := h.request(context.Background(), method, path, token, body, header)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return apiResult{status: resp.StatusCode, header: resp.Header, body: raw}
}

// stream reads an event stream until a line holds until (an event's id,
// or ": heartbeat").
func (h wallHTTP) stream(path, token string, header map[string]string, until string) (string, int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := h.request(ctx, http.MethodGet, path, token, "", header)
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
		if resp.StatusCode != http.StatusOK || strings.Contains(sc.Text(), until) {
			return b.String(), resp.StatusCode
		}
	}
	if resp.StatusCode == http.StatusOK {
		h.t.Errorf("stream %s ended (%v) before event %s: %s", path, ctx.Err(), until, b.String())
	}
	return b.String(), resp.StatusCode
}
