package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
)

// fleet is a test server with the capacity routes and a small fleet built
// through the API: site fra1, pool fra1-gpu, node n1 with two exclusive
// a100 GPUs, and a member token of tenant acme with quotas.
type fleet struct {
	*testServer
	member string // bearer secret of alice@acme, role member
	gpus   []string
}

// positionPattern is what Position.String() looks like; clients treat it as
// opaque, the test checks it is a real one.
var positionPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// newCapacityServer is setup with the capacity routes bound to the test
// database, and the extra routes beside them.
func newCapacityServer(t *testing.T, extra ...httpapi.Routes) *testServer {
	t.Helper()
	h := new(commands.Handlers)
	s := setup(t, append([]httpapi.Routes{httpapi.CapacityRoutes(h)}, extra...)...)
	*h = *commands.New(s.pg.Pool, commands.Config{})
	return s
}

// setupFleet builds the fleet on a server with the capacity routes and the
// extra routes.
func setupFleet(t *testing.T, extra ...httpapi.Routes) *fleet {
	t.Helper()
	return buildFleet(t, newCapacityServer(t, extra...))
}

// buildFleet builds the fleet through s, which serves the capacity routes.
func buildFleet(t *testing.T, s *testServer) *fleet {
	t.Helper()
	f := &fleet{testServer: s, gpus: []string{"GPU-n1-0", "GPU-n1-1"}}
	_, f.member = s.tokenFor(t, "acme", "alice@acme", core.RoleMember)

	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/sites", s.operator, `{"id":"fra1","name":"Frankfurt 1"}`, nil)
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/pools", s.operator,
		`{"id":"fra1-gpu","siteId":"fra1","kind":"bare-metal","cpuRatio":2}`, nil)
	var node map[string]any
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/nodes", s.operator, `{"id":"n1","poolId":"fra1-gpu",
		"vcpu":64,"memoryMb":524288,"diskGb":2000,
		"gpus":[{"uuid":"GPU-n1-0","model":"a100","memoryMb":81920},
		        {"uuid":"GPU-n1-1","model":"a100","memoryMb":81920,"layout":{"mode":"exclusive"}}]}`, nil).decode(t, &node)
	require.Equal(t, "n1", node["id"])
	require.EqualValues(t, 1, node["version"])
	require.Equal(t, []any{}, node["taints"])
	for res, max := range map[string]int{"gpu": 2, "vcpu": 64, "memory": 65536, "disk": 500} {
		f.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/"+res, s.operator, map[string]int{"max": max}, nil)
	}
	return f
}

// send is call with extra headers (Idempotency-Key, If-Match).
func (s *testServer) send(t *testing.T, method, path, token string, body any, hdr map[string]string) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return s.do(t, req)
}

// ok sends a request and requires the status.
func (f *fleet) ok(t *testing.T, status int, method, path, token string, body any, hdr map[string]string) response {
	t.Helper()
	r := f.send(t, method, path, token, body, hdr)
	require.Equal(t, status, r.status, "%s %s: %s", method, path, r.body)
	return r
}

// fails sends a request and requires the status and error code.
func (f *fleet) fails(t *testing.T, status int, code core.Code, method, path, token string, body any, hdr map[string]string) httpapi.ErrorDetail {
	t.Helper()
	r := f.send(t, method, path, token, body, hdr)
	require.Equal(t, status, r.status, "%s %s: %s", method, path, r.body)
	e := r.errorBody(t)
	require.Equal(t, code, e.Code, "message: %s", e.Message)
	return e
}

// reservationJSON is a reservation as the API returns it.
type reservationJSON struct {
	ID          string            `json:"id"`
	Tenant      string            `json:"tenant"`
	State       string            `json:"state"`
	PoolID      string            `json:"poolId"`
	GPUs        int               `json:"gpus"`
	MIGProfile  string            `json:"migProfile"`
	Start       time.Time         `json:"start"`
	End         time.Time         `json:"end"`
	NodeID      string            `json:"nodeId"`
	DeviceIDs   []string          `json:"deviceIds"`
	Charges     map[string]int64  `json:"charges"`
	Tolerations []json.RawMessage `json:"tolerations"`
	Conditions  []struct {
		Type    string `json:"type"`
		Status  bool   `json:"status"`
		Message string `json:"message"`
	} `json:"conditions"`
	Version  int64  `json:"version"`
	Position string `json:"position"`
}

func (f *fleet) window(t *testing.T, from, to time.Duration) (string, string) {
	now := f.pg.Now(t)
	return now.Add(from).Format(time.RFC3339), now.Add(to).Format(time.RFC3339)
}

func (f *fleet) reservationBody(t *testing.T, gpus int) map[string]any {
	start, end := f.window(t, 0, 2*time.Hour)
	return map[string]any{"poolId": "fra1-gpu", "gpus": gpus, "vcpu": 8, "memoryMb": 16384, "start": start, "end": end}
}

func (f *fleet) countReservations(t *testing.T, tenant string) int {
	t.Helper()
	var n int
	require.NoError(t, f.pg.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM reservations WHERE tenant_id = $1", tenant).Scan(&n))
	return n
}

func TestReservationLifecycleOverHTTP(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	body := f.reservationBody(t, 1)
	key := map[string]string{"Idempotency-Key": "create-1"}

	first := f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, body, key)
	var rsv reservationJSON
	first.decode(t, &rsv)
	require.Regexp(t, `^rsv_`, rsv.ID)
	require.Equal(t, "acme", rsv.Tenant)
	require.Equal(t, "booked", rsv.State)
	require.EqualValues(t, 1, rsv.Version)
	require.Regexp(t, positionPattern, rsv.Position)
	require.NotEqual(t, strings.Repeat("0", 32), rsv.Position)
	require.Equal(t, "n1", rsv.NodeID)
	require.Len(t, rsv.DeviceIDs, 1)
	require.Contains(t, f.gpus, rsv.DeviceIDs[0])
	require.Equal(t, map[string]int64{"gpu": 1, "vcpu": 8, "memory": 16384}, rsv.Charges)
	require.Empty(t, rsv.Conditions)
	require.Regexp(t, `"start":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"`, string(first.body), "times are RFC 3339 UTC")

	// A retry with the same key and body replays the first response and
	// books nothing more.
	again := f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, body, key)
	require.Equal(t, string(first.body), string(again.body))
	require.Equal(t, 1, f.countReservations(t, "acme"))

	// The same key with another body is refused and books nothing.
	other := f.reservationBody(t, 2)
	e := f.fails(t, http.StatusUnprocessableEntity, core.CodeIdempotencyKeyReused, http.MethodPost, "/v1/reservations", f.member, other, key)
	require.Contains(t, e.Message, "create-1")
	require.Equal(t, 1, f.countReservations(t, "acme"))

	// Extend under the version just read.
	_, newEnd := f.window(t, 0, 3*time.Hour)
	var extended reservationJSON
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/reservations/"+rsv.ID+"/extend", f.member,
		map[string]string{"end": newEnd}, map[string]string{"If-Match": `"1"`, "Idempotency-Key": "extend-1"}).decode(t, &extended)
	require.EqualValues(t, 2, extended.Version)
	require.Equal(t, newEnd, extended.End.Format(time.RFC3339))
	require.Equal(t, rsv.DeviceIDs, extended.DeviceIDs, "an extension keeps its devices")
	require.Greater(t, extended.Position, rsv.Position, "positions sort in log order")

	// A stale If-Match changes nothing.
	e = f.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPost, "/v1/reservations/"+rsv.ID+"/release", f.member, nil,
		map[string]string{"If-Match": "1"})
	require.Contains(t, e.Message, "version 2")

	var released reservationJSON
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/reservations/"+rsv.ID+"/release", f.member, nil,
		map[string]string{"If-Match": "2"}).decode(t, &released)
	require.Equal(t, "released", released.State)
	require.EqualValues(t, 3, released.Version)
	require.Greater(t, released.Position, extended.Position)

	// Released capacity and quota are back: both GPUs can be reserved.
	var both reservationJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, f.reservationBody(t, 2), nil).decode(t, &both)
	require.Equal(t, "booked", both.State)
	require.ElementsMatch(t, f.gpus, both.DeviceIDs)

	// Releasing twice is refused by the state table.
	f.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPost, "/v1/reservations/"+rsv.ID+"/release", f.member, nil, nil)
}

func TestReservationQuotaExceededOverHTTP(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	f.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/gpu", f.operator, `{"max":1}`, nil)

	e := f.fails(t, http.StatusConflict, core.CodeQuotaExceeded, http.MethodPost, "/v1/reservations", f.member, f.reservationBody(t, 2), nil)
	require.Contains(t, e.Message, "gpu")
	require.Equal(t, 0, f.countReservations(t, "acme"))

	// A tenant with no quota at all reserves nothing either.
	_, globex := f.tokenFor(t, "globex", "hank@globex", core.RoleMember)
	f.fails(t, http.StatusConflict, core.CodeQuotaExceeded, http.MethodPost, "/v1/reservations", globex, f.reservationBody(t, 1), nil)
}

func TestCapacityRoutesEnforceRoles(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	_, viewer := f.tokenFor(t, "acme", "vera@acme", core.RoleViewer)

	f.fails(t, http.StatusForbidden, core.CodePermissionDenied, http.MethodPost, "/v1/reservations", viewer, f.reservationBody(t, 1), nil)
	require.Equal(t, 0, f.countReservations(t, "acme"))
	var rsv reservationJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, f.reservationBody(t, 1), nil).decode(t, &rsv)
	f.fails(t, http.StatusForbidden, core.CodePermissionDenied, http.MethodPost, "/v1/reservations/"+rsv.ID+"/release", viewer, nil, nil)

	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/nodes/n1/cordon", ""},
		{http.MethodPost, "/v1/nodes/n1/taint", `{"key":"k"}`},
		{http.MethodPost, "/v1/sites", `{"id":"ams1","name":"Amsterdam"}`},
		{http.MethodPost, "/v1/devices/GPU-n1-0/quarantine", ""},
		{http.MethodPut, "/v1/gpus/GPU-n1-0/mode", `{"mode":"time-slice","slots":4}`},
		{http.MethodPut, "/v1/tenants/acme/quotas/gpu", `{"max":1000}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		f.fails(t, http.StatusForbidden, core.CodePermissionDenied, c.method, c.path, f.member, body, nil)
	}

	// The refused cordon changed nothing: the operator's cordon is the
	// first change to the node.
	var node map[string]any
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n1/cordon", f.operator, nil, nil).decode(t, &node)
	require.Equal(t, true, node["cordoned"])
	require.EqualValues(t, 2, node["version"])
}

func TestReservationOfAnotherTenantIsNotFound(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	_, globex := f.tokenFor(t, "globex", "hank@globex", core.RoleMember)
	var rsv reservationJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, f.reservationBody(t, 1), nil).decode(t, &rsv)
	_, end := f.window(t, 0, 5*time.Hour)

	missing := "rsv_00000000-0000-0000-0000-000000000000"
	for _, action := range []string{"extend", "release", "cancel"} {
		var body any
		if action == "extend" {
			body = map[string]string{"end": end}
		}
		theirs := f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodPost, "/v1/reservations/"+rsv.ID+"/"+action, globex, body, nil)
		none := f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodPost, "/v1/reservations/"+missing+"/"+action, globex, body, nil)
		require.Equal(t, strings.ReplaceAll(theirs.Message, rsv.ID, "ID"), strings.ReplaceAll(none.Message, missing, "ID"),
			"another tenant's reservation is indistinguishable from a missing one")
	}
	// Nothing happened to it: its owner releases it at version 1.
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/reservations/"+rsv.ID+"/release", f.member, nil, map[string]string{"If-Match": "1"})
}

func TestFleetCommandsOverHTTP(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	op := f.operator

	// Taint the node: a reservation that does not tolerate it stays pending
	// and says why; one that does is booked.
	var node map[string]any
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n1/taint", op, `{"key":"gpu.example.com/maint","value":"yes","effect":"NoSchedule"}`,
		map[string]string{"If-Match": "1"}).decode(t, &node)
	require.Equal(t, []any{map[string]any{"key": "gpu.example.com/maint", "value": "yes", "effect": "NoSchedule"}}, node["taints"])
	require.EqualValues(t, 2, node["version"])
	require.Regexp(t, positionPattern, node["position"])

	var pending reservationJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, f.reservationBody(t, 1), nil).decode(t, &pending)
	require.Equal(t, "pending", pending.State)
	require.Len(t, pending.Conditions, 1)
	require.Equal(t, "Unschedulable", pending.Conditions[0].Type)
	require.Contains(t, pending.Conditions[0].Message, "gpu.example.com/maint=yes")
	var cancelled reservationJSON
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/reservations/"+pending.ID+"/cancel", f.member, `{}`, nil).decode(t, &cancelled)
	require.Equal(t, "cancelled", cancelled.State)

	tolerant := f.reservationBody(t, 1)
	tolerant["tolerations"] = []map[string]string{{"key": "gpu.example.com/maint", "value": "yes"}}
	var booked reservationJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, tolerant, nil).decode(t, &booked)
	require.Equal(t, "booked", booked.State)
	require.JSONEq(t, `{"key":"gpu.example.com/maint","value":"yes","effect":"NoSchedule"}`, string(booked.Tolerations[0]))
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/reservations/"+booked.ID+"/release", f.member, nil, nil)

	f.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n1/untaint", op, `{"key":"gpu.example.com/maint","value":"yes"}`, nil).decode(t, &node)
	require.Equal(t, []any{}, node["taints"])
	require.EqualValues(t, 3, node["version"])

	// Cordon under a stale version is refused; under the right one it
	// lands; repeating it changes nothing.
	f.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPost, "/v1/nodes/n1/cordon", op, nil, map[string]string{"If-Match": "2"})
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n1/cordon", op, nil, map[string]string{"If-Match": "3"}).decode(t, &node)
	require.Equal(t, true, node["cordoned"])
	require.EqualValues(t, 4, node["version"])
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n1/cordon", op, nil, nil).decode(t, &node)
	require.EqualValues(t, 4, node["version"], "a no-op writes no new version")
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n1/uncordon", op, nil, nil).decode(t, &node)
	require.Equal(t, false, node["cordoned"])

	// Quarantine and health on one GPU.
	var dev map[string]any
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/devices/GPU-n1-0/quarantine", op, nil, map[string]string{"If-Match": "1"}).decode(t, &dev)
	require.Equal(t, map[string]any{"id": "GPU-n1-0", "mode": "exclusive", "health": "healthy", "quarantined": true,
		"version": float64(2), "position": dev["position"]}, dev)
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/devices/GPU-n1-0/unquarantine", op, nil, nil).decode(t, &dev)
	require.Equal(t, false, dev["quarantined"])
	f.ok(t, http.StatusOK, http.MethodPut, "/v1/devices/GPU-n1-0/health", op, `{"health":"unhealthy"}`, nil).decode(t, &dev)
	require.Equal(t, "unhealthy", dev["health"])
	require.EqualValues(t, 4, dev["version"])
	f.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPut, "/v1/devices/GPU-n1-0/health", op, `{"health":"healthy"}`,
		map[string]string{"If-Match": "3"})
	f.ok(t, http.StatusOK, http.MethodPut, "/v1/devices/GPU-n1-0/health", op, `{"health":"healthy"}`, nil)

	// Split GPU 1 into MIG instances and reserve one of them.
	f.ok(t, http.StatusOK, http.MethodPut, "/v1/gpus/GPU-n1-1/mode", op, `{"mode":"mig","mig":["3g.40gb","2g.20gb","1g.10gb"]}`, nil).decode(t, &dev)
	require.Equal(t, "mig", dev["mode"])
	require.EqualValues(t, 2, dev["version"])
	mig := f.reservationBody(t, 1)
	mig["migProfile"] = "1g.10gb"
	var inst reservationJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, mig, nil).decode(t, &inst)
	require.Equal(t, "booked", inst.State)
	require.Equal(t, []string{"GPU-n1-1/mig-2"}, inst.DeviceIDs)
	// A booked GPU cannot change mode.
	e := f.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPut, "/v1/gpus/GPU-n1-1/mode", op, `{"mode":"exclusive"}`, nil)
	require.Contains(t, e.Message, "booked")

	// Quotas: the response shows usage; lowering below it is refused.
	var quota map[string]any
	f.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/gpu", op, `{"max":5}`, nil).decode(t, &quota)
	require.Equal(t, "acme", quota["tenant"])
	require.Equal(t, "gpu", quota["resource"])
	require.EqualValues(t, 1, quota["used"])
	require.EqualValues(t, 5, quota["max"])
	f.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPut, "/v1/tenants/acme/quotas/gpu", op, `{"max":0}`, nil)
	f.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/gpu:a100", op, `{"max":0}`, nil)
}

func TestFleetCreatesAreIdempotent(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	key := map[string]string{"Idempotency-Key": "pool-ams"}
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/sites", f.operator, `{"id":"ams1","name":"Amsterdam 1"}`, nil)
	first := f.ok(t, http.StatusCreated, http.MethodPost, "/v1/pools", f.operator, `{"id":"ams1-gpu","siteId":"ams1","kind":"provider","lostAfterSeconds":600}`, key)
	again := f.ok(t, http.StatusCreated, http.MethodPost, "/v1/pools", f.operator, `{"id":"ams1-gpu","siteId":"ams1","kind":"provider","lostAfterSeconds":600}`, key)
	require.JSONEq(t, string(first.body), string(again.body))
	f.fails(t, http.StatusUnprocessableEntity, core.CodeIdempotencyKeyReused, http.MethodPost, "/v1/pools", f.operator,
		`{"id":"ams1-gpu","siteId":"ams1","kind":"vps-host"}`, key)
	// Without a key, creating it again is a conflict.
	f.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPost, "/v1/pools", f.operator,
		`{"id":"ams1-gpu","siteId":"ams1","kind":"provider"}`, nil)
}
