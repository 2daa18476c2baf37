package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

// xtTenant is one tenant of the matrix and what it owns, all made through
// the API.
type xtTenant struct {
	name                 string
	member, viewer       string // bearer secrets
	memberID, viewerID   string // token ids
	memberWho, viewerWho string // identities
	reservation          string
	allocation           string
	endpoint, endpointSK string // webhook endpoint id and its secret
	command              string // node command id
	instance             string // instance on the reservation
	commandKey           string // its Idempotency-Key
}

// TestCrossTenantMatrix: tenant A (acme) calls every route the server
// registers, as a member and as a viewer, aimed at tenant B's (globex)
// objects, and learns nothing and changes nothing there:
//
//   - a route naming one of B's objects never answers 2xx: NOT_FOUND, or
//     PERMISSION_DENIED where the route refuses A's role anyway; and it
//     answers exactly as it does for an id that does not exist (same
//     status, code and message), so there is no existence oracle;
//   - no response carries any of B's ids, secrets, identities, event ids or
//     B's name, unless A's own request held that string;
//   - whatever A creates belongs to A, and lists and the event log (page
//     and stream) hold only A's items;
//   - every row of every table that belongs to B (tenant_id = globex) is the
//     same afterwards, and so is what B reads through the API.
//
// Run with -v for the matrix: route, caller, target, status, code.
func TestCrossTenantMatrix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newAPIServer(t, 2*time.Second)
	s.runBroker(t)

	xtFleet(t, s, "acme", "globex")
	now := s.pg.Now(t)
	// B first, A last: A's own newest event then comes after all of B's,
	// which the stream check relies on.
	b := xtMakeTenant(t, s, "globex", "carol@globex", "vera@globex", now)
	a := xtMakeTenant(t, s, "acme", "alice@acme", "vic@acme", now)
	s.catchUp(t)

	// Everything that names B or is B's secret. A response may hold one
	// only if A's request did (an id echoed in "… not found").
	bSecrets := []string{b.name, b.member, b.viewer, b.memberID, b.viewerID, b.memberWho, b.viewerWho,
		b.reservation, b.allocation, b.endpoint, b.endpointSK, b.command, b.commandKey, b.instance,
		"hooks.globex.example", "registry.globex.example"}
	rows, err := s.pg.Pool.Query(ctx, "SELECT id::text FROM outbox WHERE tenant_id = 'globex'")
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		bSecrets = append(bSecrets, id)
	}
	require.NoError(t, rows.Err())
	require.Greater(t, len(bSecrets), 14, "B has events")

	bBefore := xtReadAsB(t, s, b)
	dbBefore := xtTenantRows(t, s, "globex")

	// Path parameters: B's object for the route's kind of id, and an id
	// of the same shape that does not exist.
	unknown := map[string]string{}
	unknownOf := func(id string) string {
		if u, ok := unknown[id]; ok {
			return u
		}
		u := regexp.MustCompile(`[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}|[0-9a-f]{16,}$`).
			ReplaceAllStringFunc(id, func(m string) string {
				return strings.Repeat("0", len(m)-1) + "1"
			})
		if u == id {
			u = id + "-unknown"
		}
		unknown[id] = u
		return u
	}
	// bObject is B's object a route's :id names, by the route's prefix;
	// fleet objects belong to no tenant (operator routes).
	bObject := func(path string) (id string, owned bool) {
		switch {
		case strings.HasPrefix(path, "/v1/reservations/"):
			return b.reservation, true
		case strings.HasPrefix(path, "/v1/webhook-endpoints/"):
			return b.endpoint, true
		case strings.HasPrefix(path, "/v1/tokens/"):
			return b.memberID, true
		case strings.HasPrefix(path, "/v1/commands/"):
			return b.command, true
		case strings.HasPrefix(path, "/v1/instances/"):
			return b.instance, true
		case strings.HasPrefix(path, "/v1/nodes/"):
			return "n1", false
		case strings.HasPrefix(path, "/v1/devices/"), strings.HasPrefix(path, "/v1/gpus/"):
			return "GPU-n1-0", false
		case strings.HasPrefix(path, "/v1/pools/"):
			return "fra1-gpu", false
		case strings.HasPrefix(path, "/v1/sites/"):
			return "fra1", false
		case strings.HasPrefix(path, "/v1/priority-classes/"):
			return "standard", false
		}
		t.Errorf("%s: no rule for its :id; add one to bObject", path)
		return b.reservation, true
	}
	far := now.Add(24 * time.Hour).Format(time.RFC3339)
	bodies := map[string]string{
		"POST /v1/sites":                           `{"id":"xt-site","name":"x"}`,
		"POST /v1/pools":                           `{"id":"xt-pool","siteId":"fra1","kind":"bare-metal"}`,
		"POST /v1/nodes":                           `{"id":"xt-node","poolId":"fra1-gpu","vcpu":1,"memoryMb":1,"diskGb":1}`,
		"POST /v1/nodes/:id/taint":                 `{"key":"xt"}`,
		"POST /v1/nodes/:id/untaint":               `{"key":"xt"}`,
		"PUT /v1/devices/:id/health":               `{"health":"unhealthy"}`,
		"PUT /v1/gpus/:id/mode":                    `{"mode":"exclusive"}`,
		"PUT /v1/tenants/:tenant/quotas/:resource": `{"max":0}`,
		"PUT /v1/tenants/:tenant/priority-classes": `{"classes":[]}`,
		"PUT /v1/tenants/:tenant/fair-share":       `{"share":7}`,
		"POST /v1/priority-classes":                `{"name":"xt-class","value":1000000}`,
		"POST /v1/reservations":                    fmt.Sprintf(`{"poolId":"fra1-gpu","vcpu":1,"start":%q,"end":%q}`, now.Format(time.RFC3339), far),
		"POST /v1/reservations/:id/extend":         fmt.Sprintf(`{"end":%q}`, far),
		"POST /v1/tokens":                          `{"tenant":"globex","identity":"mallory@globex","role":"member"}`,
		"POST /v1/webhook-endpoints":               `{"url":"https://hooks.acme.example/xt","tenant":"globex"}`,
		"PATCH /v1/webhook-endpoints/:id":          `{"description":"pwned","url":"https://hooks.acme.example/steal","enabled":false}`,
		"POST /v1/webhook-endpoints/:id/recover":   `{"since":"2029-01-01T00:00:00Z"}`,
		"POST /v1/instances":                       fmt.Sprintf(`{"reservationId":%q,"image":"registry.acme.example/x:1"}`, b.reservation),
		"POST /v1/nodes/:id/join":                  `{"poolId":"fra1-gpu"}`,
		"POST /v1/commands":                        fmt.Sprintf(`{"nodeId":"n1","allocationId":%q,"kind":"exec","payload":{"script":"cat /etc/shadow"}}`, b.allocation),
	}
	queries := map[string]string{
		"/v1/reservations":        "tenant=globex&limit=500",
		"/v1/usage-windows":       "tenant=globex&reservation=" + url.QueryEscape(b.reservation) + "&limit=500",
		"/v1/events":              "limit=500&types=reservation.booked,reservation.pending,webhook.endpoint.created",
		"/v1/events/stream":       "after=",
		"/v1/webhook-endpoints":   "limit=200",
		"/v1/nodes":               "pool=fra1-gpu",
		"/v1/devices/:id/holders": "at=" + url.QueryEscape(now.Add(time.Minute).Format(time.RFC3339)),
		"/v1/tokens":              "tenant=globex&limit=500",
		"/v1/tenants":             "limit=500",
		"/v1/pools":               "site=fra1&limit=500",
	}

	type outcome struct{ route, caller, target, result string }
	var matrix []outcome
	routes := s.e.Routes()
	slices.SortFunc(routes, func(x, y *echo.Route) int { return strings.Compare(x.Path+" "+x.Method, y.Path+" "+y.Method) })
	seq := 0
	for _, rt := range routes {
		if rt.Method == echo.RouteNotFound {
			continue
		}
		key := rt.Method + " " + rt.Path
		var bPath, uPath []string
		var substituted []string // B's ids put into the path
		owned := false
		for seg := range strings.SplitSeq(rt.Path, "/") {
			bSeg, uSeg := seg, seg
			switch seg {
			case ":tenant":
				bSeg, uSeg = b.name, unknownOf(b.name)
				substituted = append(substituted, b.name)
			case ":resource":
				bSeg, uSeg = "gpu", "gpu"
			default:
				if strings.HasPrefix(seg, ":") {
					id, o := bObject(rt.Path)
					bSeg, uSeg, owned = id, unknownOf(id), owned || o
					substituted = append(substituted, id)
				}
			}
			bPath, uPath = append(bPath, url.PathEscape(bSeg)), append(uPath, url.PathEscape(uSeg))
		}
		query := queries[rt.Path]
		target := func(p []string) string {
			if query == "" {
				return strings.Join(p, "/")
			}
			return strings.Join(p, "/") + "?" + query
		}
		// Routes without an entry take no body (cordon, release, …).
		body := bodies[key]
		send := func(token, tgt string) (apiResult, string) {
			seq++
			var raw []byte
			if body != "" {
				raw = []byte(body)
			}
			req, err := rawRequest(rt.Method, tgt, raw)
			require.NoError(t, err, "%s %s", rt.Method, tgt)
			if raw != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("Authorization", "Bearer "+token)
			if rt.Method == http.MethodPost {
				req.Header.Set("Idempotency-Key", fmt.Sprintf("xt-%d", seq))
			}
			// A stream ends after its first frame (nil stop): the event
			// log is checked in depth below.
			r := s.serve(req, nil, 10*time.Second)
			require.False(t, r.timedOut, "%s %s: the stream wrote nothing", rt.Method, tgt)
			return r, tgt + " " + string(raw)
		}
		for _, caller := range []struct{ role, token string }{{"member", a.member}, {"viewer", a.viewer}} {
			r, sent := send(caller.token, target(bPath))
			what := fmt.Sprintf("%s %s as A's %s", rt.Method, target(bPath), caller.role)
			code := xtCode(r)
			matrix = append(matrix, outcome{key, caller.role, xtTargetName(substituted, b), fmt.Sprintf("%d %s", r.status, code)})

			if r.status >= 500 && !(rt.Path == "/readyz" && r.status == http.StatusServiceUnavailable) {
				t.Errorf("%s: %d %s\nserver log:\n%s", what, r.status, r.body, s.logs.about(r.header.Get(echo.HeaderXRequestID)))
			}
			for _, secret := range bSecrets {
				if bytes.Contains(r.body, []byte(secret)) && !strings.Contains(sent, secret) {
					t.Errorf("LEAK %s: the response holds B's %q: %s", what, secret, r.body)
				}
			}
			if r.status < 300 {
				for _, tn := range xtTenantFields(r.body) {
					if tn != a.name {
						t.Errorf("LEAK %s: %d with an object of tenant %q: %s", what, r.status, tn, r.body)
					}
				}
			}
			if len(substituted) == 0 {
				continue
			}
			if owned && r.status < 300 {
				t.Errorf("LEAK %s: %d on B's object: %s", what, r.status, r.body)
			}
			if owned && rt.Method == http.MethodGet && code != core.CodeNotFound && code != core.CodePermissionDenied {
				t.Errorf("%s: want NOT_FOUND (or PERMISSION_DENIED), got %d %s", what, r.status, r.body)
			}
			if !owned && rt.Method == http.MethodGet && r.status < 300 {
				// A fleet object every role may read (a site, a pool)
				// is public: its existence is no secret to compare.
				continue
			}
			// The same call with an id that does not exist must answer
			// the same, or the difference tells A that B's object exists.
			u, _ := send(caller.token, target(uPath))
			if u.status != r.status || xtCode(u) != code || xtMessage(r, substituted, nil) != xtMessage(u, substituted, unknownOf) {
				t.Errorf("ORACLE %s: B's id answers %d %s, an unknown id %d %s", what, r.status, r.body, u.status, u.body)
			}
		}
	}

	// B's rows, everywhere, and what B reads are unchanged.
	require.Equal(t, dbBefore, xtTenantRows(t, s, "globex"), "rows of tenant globex changed")
	bAfter := xtReadAsB(t, s, b)
	for k, v := range bBefore {
		require.JSONEq(t, v, bAfter[k], "B's %s changed", k)
	}

	// The event log as A: every page, and the stream from the start of
	// the log up to A's newest event (after all of B's).
	for _, token := range []string{a.member, a.viewer} {
		var newest string
		after := ""
		for {
			var page struct {
				Items      []core.Event `json:"items"`
				NextCursor string       `json:"nextCursor"`
			}
			r := s.must(t, http.StatusOK, http.MethodGet, "/v1/events?limit=500&after="+after, token, nil, &page)
			for _, secret := range bSecrets {
				require.NotContains(t, string(r.body), secret, "LEAK: A's event page holds B's %q", secret)
			}
			for _, e := range page.Items {
				require.Equal(t, a.name, e.TenantID, "LEAK: A's event page holds event %s of %q", e.ID, e.TenantID)
				newest = e.ID.String()
			}
			if len(page.Items) == 0 {
				break
			}
			after = page.NextCursor
		}
		require.NotEmpty(t, newest)
		req, err := rawRequest(http.MethodGet, "/v1/events/stream?after=", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		r := s.serve(req, func(b []byte) bool { return bytes.Contains(b, []byte(newest)) }, 20*time.Second)
		require.False(t, r.timedOut, "the stream never reached A's newest event %s: %s", newest, r.body)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		for _, secret := range bSecrets {
			require.NotContains(t, string(r.body), secret, "LEAK: A's event stream holds B's %q", secret)
		}
		var frames int
		for line := range strings.SplitSeq(string(r.body), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var e core.Event
				require.NoError(t, json.Unmarshal([]byte(data), &e))
				require.Equal(t, a.name, e.TenantID, "LEAK: A's event stream holds event %s of %q", e.ID, e.TenantID)
				frames++
			}
		}
		require.Positive(t, frames)
	}

	var table strings.Builder
	fmt.Fprintf(&table, "\n| route | caller | target | status code |\n|---|---|---|---|\n")
	for _, o := range matrix {
		fmt.Fprintf(&table, "| %s | %s | %s | %s |\n", o.route, o.caller, o.target, o.result)
	}
	t.Log(table.String())
}

// xtFleet makes the fleet, as the operator: site fra1, pool fra1-gpu, node
// n1 with four GPUs, and ample quotas for each tenant.
func xtFleet(t *testing.T, s *apiServer, tenants ...string) {
	t.Helper()
	ctx := context.Background()
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/sites", s.operator, `{"id":"fra1","name":"Frankfurt 1"}`, nil)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/pools", s.operator, `{"id":"fra1-gpu","siteId":"fra1","kind":"bare-metal"}`, nil)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/nodes", s.operator, `{"id":"n1","poolId":"fra1-gpu",
		"vcpu":64,"memoryMb":524288,"diskGb":2000,"gpus":[
		{"uuid":"GPU-n1-0","model":"a100","memoryMb":81920},{"uuid":"GPU-n1-1","model":"a100","memoryMb":81920},
		{"uuid":"GPU-n1-2","model":"a100","memoryMb":81920},{"uuid":"GPU-n1-3","model":"a100","memoryMb":81920}]}`, nil)
	for _, tn := range tenants {
		require.NoError(t, s.pg.Q.TenantEnsure(ctx, tn))
		for res, max := range map[string]int{"gpu": 100, "vcpu": 1000, "memory": 1 << 20, "disk": 1000} {
			s.must(t, http.StatusOK, http.MethodPut, "/v1/tenants/"+tn+"/quotas/"+res, s.operator, map[string]int{"max": max}, nil)
		}
	}
}

// xtMakeTenant makes a tenant with a member and a viewer token, a booked
// reservation on n1, a webhook endpoint, a node command and an instance,
// all through the API.
func xtMakeTenant(t *testing.T, s *apiServer, name, memberWho, viewerWho string, now time.Time) xtTenant {
	t.Helper()
	x := xtTenant{name: name, memberWho: memberWho, viewerWho: viewerWho, commandKey: "cmd-key-" + name}
	var tok struct{ ID, Token string }
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator,
		map[string]string{"tenant": name, "identity": memberWho, "role": "member"}, &tok)
	x.member, x.memberID = tok.Token, tok.ID
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator,
		map[string]string{"tenant": name, "identity": viewerWho, "role": "viewer"}, &tok)
	x.viewer, x.viewerID = tok.Token, tok.ID

	var rsv struct{ ID, State string }
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/reservations", x.member, map[string]any{
		"poolId": "fra1-gpu", "gpus": 1, "vcpu": 2, "memoryMb": 1024,
		"start": now.Format(time.RFC3339), "end": now.Add(2 * time.Hour).Format(time.RFC3339),
	}, &rsv)
	require.Equal(t, "booked", rsv.State)
	// Its window has begun: activate it, as the reconciler would, so that
	// node jobs may run in it.
	require.NoError(t, commandstest.Activate(context.Background(), commands.New(s.pg.Pool, commands.Config{}), rsv.ID))
	x.reservation = rsv.ID
	require.NoError(t, s.pg.Pool.QueryRow(context.Background(),
		"SELECT id FROM allocations WHERE reservation_id = $1", rsv.ID).Scan(&x.allocation))

	var ep struct{ ID, Secret string }
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/webhook-endpoints", x.member,
		map[string]any{"url": "https://hooks." + name + ".example/in", "eventTypes": []string{"reservation.booked"}}, &ep)
	x.endpoint, x.endpointSK = ep.ID, ep.Secret

	req, err := rawRequest(http.MethodPost, "/v1/commands",
		[]byte(fmt.Sprintf(`{"nodeId":"n1","allocationId":%q,"kind":"exec","payload":{"script":"nvidia-smi"}}`, x.allocation)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+x.member)
	req.Header.Set("Idempotency-Key", x.commandKey)
	r := s.serve(req, nil, time.Second)
	require.Equal(t, http.StatusCreated, r.status, "POST /v1/commands: %s", r.body)
	var cmd struct{ ID string }
	require.NoError(t, json.Unmarshal(r.body, &cmd))
	x.command = cmd.ID

	var inst struct{ ID string }
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/instances", x.member,
		map[string]any{"reservationId": x.reservation, "image": "registry." + name + ".example/train:1", "command": "python train.py"}, &inst)
	x.instance = inst.ID
	return x
}

// xtReadAsB is what B reads about its own objects through the API.
func xtReadAsB(t *testing.T, s *apiServer, b xtTenant) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range []string{
		"/v1/reservations/" + b.reservation, "/v1/reservations?limit=500", "/v1/usage-windows?limit=500",
		"/v1/webhook-endpoints/" + b.endpoint, "/v1/webhook-endpoints?limit=200",
		"/v1/webhook-endpoints/" + b.endpoint + "/attempts", "/v1/commands/" + b.command,
		"/v1/instances/" + b.instance,
		"/v1/tokens/" + b.memberID, "/v1/tokens/" + b.viewerID, "/v1/events?limit=500",
		"/v1/tokens?limit=500", "/v1/tenants/" + b.name, "/v1/tenants/" + b.name + "/quotas", "/v1/tenants",
		"/v1/tenants/" + b.name + "/priority-classes", "/v1/tenants/" + b.name + "/fair-share",
	} {
		body := s.must(t, http.StatusOK, http.MethodGet, p, b.member, nil, nil).body
		if strings.HasPrefix(p, "/v1/events") {
			// A caught-up page's cursor follows the whole log (so that it
			// outlives retention while B's own events are quiet): it moves
			// with A's writes, which security.md lists as what a tenant
			// sees of others. B's events themselves must not.
			var page map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(body, &page))
			body = page["items"]
		}
		out[p] = string(body)
	}
	return out
}

// xtTenantRows digests, table by table, every row whose tenant_id is
// tenant: a change anywhere to what the tenant owns shows up here.
func xtTenantRows(t *testing.T, s *apiServer, tenant string) map[string]string {
	t.Helper()
	ctx := context.Background()
	rows, err := s.pg.Pool.Query(ctx, `SELECT table_name FROM information_schema.columns
		WHERE table_schema = 'public' AND column_name = 'tenant_id' ORDER BY table_name`)
	require.NoError(t, err)
	var tables []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, tables)
	out := map[string]string{}
	for _, tbl := range tables {
		var digest string
		require.NoError(t, s.pg.Pool.QueryRow(ctx, fmt.Sprintf(
			`SELECT count(*) || ':' || coalesce(md5(string_agg(to_jsonb(x)::text, ',' ORDER BY to_jsonb(x)::text)), '')
			 FROM %q x WHERE tenant_id = $1`, tbl), tenant).Scan(&digest))
		out[tbl] = digest
	}
	return out
}

// xtCode is the error code of a response, "" for a success.
func xtCode(r apiResult) core.Code {
	if r.status < 300 {
		return ""
	}
	var env struct {
		Error struct {
			Code core.Code `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &env)
	return env.Error.Code
}

// xtMessage is an error message with the ids of the path replaced by a
// placeholder (ids mapped through rename first when it is set), so that
// the answers for two ids can be compared.
func xtMessage(r apiResult, ids []string, rename func(string) string) string {
	var env struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &env)
	msg := env.Error.Message
	for _, id := range ids {
		if rename != nil {
			id = rename(id)
		}
		msg = strings.ReplaceAll(msg, id, "<id>")
	}
	return regexp.MustCompile(`\(request id [^)]*\)`).ReplaceAllString(msg, "(request id)")
}

// xtTenantFields returns the values of every "tenant" and "tenantId"
// field anywhere in a JSON body.
func xtTenantFields(body []byte) []string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && (k == "tenant" || k == "tenantId") {
					out = append(out, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// xtTargetName names what a matrix row aimed at.
func xtTargetName(ids []string, b xtTenant) string {
	if len(ids) == 0 {
		return "-"
	}
	names := map[string]string{b.reservation: "B's reservation", b.endpoint: "B's endpoint", b.memberID: "B's token",
		b.command: "B's command", b.instance: "B's instance", b.name: "B's tenant", "n1": "node n1", "GPU-n1-0": "GPU-n1-0", "fra1-gpu": "pool fra1-gpu", "fra1": "site fra1"}
	var out []string
	for _, id := range ids {
		out = append(out, names[id])
	}
	return strings.Join(out, ", ")
}
