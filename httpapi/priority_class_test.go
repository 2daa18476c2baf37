package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/queries"
)

// classServer is the fleet of setupFleet (site fra1, pool fra1-gpu, node n1
// with two GPUs, a member of acme with quotas) on a server that also has
// the fleet, tenant and reservation reads, and a viewer of acme.
type classServer struct {
	*fleet
	viewer string
}

func setupClasses(t *testing.T) *classServer {
	t.Helper()
	s := setup(t, func(r httpapi.Router) {
		q := queries.New(r.Deps.Pool)
		q.WaitTimeout = 10 * time.Second
		httpapi.CapacityRoutes(commands.New(r.Deps.Pool, commands.Config{}))(r)
		httpapi.FleetReadRoutes(q)(r)
		httpapi.TenantReadRoutes(q)(r)
		httpapi.ReadRoutes(q)(r)
	})
	f := &fleet{testServer: s, gpus: []string{"GPU-n1-0", "GPU-n1-1"}}
	_, f.member = s.tokenFor(t, "acme", "alice@acme", core.RoleMember)
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/sites", s.operator, `{"id":"fra1","name":"Frankfurt 1"}`, nil)
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/pools", s.operator, `{"id":"fra1-gpu","siteId":"fra1","kind":"bare-metal"}`, nil)
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/nodes", s.operator, `{"id":"n1","poolId":"fra1-gpu",
		"vcpu":64,"memoryMb":524288,"diskGb":2000,
		"gpus":[{"uuid":"GPU-n1-0","model":"a100","memoryMb":81920},{"uuid":"GPU-n1-1","model":"a100","memoryMb":81920}]}`, nil)
	for res, max := range map[string]int{"gpu": 2, "vcpu": 64, "memory": 65536, "disk": 500} {
		f.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/"+res, s.operator, map[string]int{"max": max}, nil)
	}
	c := &classServer{fleet: f}
	_, c.viewer = s.tokenFor(t, "acme", "vic@acme", core.RoleViewer)
	return c
}

// catchUp runs the projections until they have applied pos.
func (c *classServer) catchUp(t *testing.T, pos string) {
	t.Helper()
	want, err := outbox.ParsePosition(pos)
	require.NoError(t, err)
	ctx := context.Background()
	var disps []*outbox.Dispatcher
	for _, p := range projections.All() {
		disps = append(disps, outbox.NewTxDispatcher(c.pg.Pool, "test", p, nil))
	}
	require.Eventually(t, func() bool {
		done := true
		for _, d := range disps {
			_, err := d.RunOnce(ctx)
			require.NoError(t, err)
			cur, err := outbox.CursorOf(ctx, c.pg.Q, d.SinkID())
			require.NoError(t, err)
			done = done && !cur.Less(want)
		}
		return done
	}, 20*time.Second, 2*time.Millisecond)
}

// countRows counts what a query finds.
func (c *classServer) countRows(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, c.pg.Pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

type classJSON struct {
	Name         string `json:"name"`
	Value        int    `json:"value"`
	Preemptible  bool   `json:"preemptible"`
	GraceSeconds int    `json:"graceSeconds"`
	Description  string `json:"description"`
	IsDefault    bool   `json:"isDefault"`
	Version      int64  `json:"version"`
	Position     string `json:"position"`
}

type tenantClassesJSON struct {
	Tenant       string   `json:"tenant"`
	Classes      []string `json:"classes"`
	DefaultClass string   `json:"defaultClass"`
	Allowed      []string `json:"allowed"`
	Version      int64    `json:"version"`
	Position     string   `json:"position"`
}

// An operator creates a class (idempotently, 409 for a name that exists),
// every role lists and reads classes, the operator replaces acme's
// allow-list, and a reservation of the class shows it in its answer, its
// GET, the list and its event.
func TestPriorityClassesOverHTTP(t *testing.T) {
	t.Parallel()
	s := setupClasses(t)
	op := s.operator
	body := `{"name":"batch","value":-100,"preemptible":true,"graceSeconds":60,"description":"may be displaced"}`
	key := map[string]string{"Idempotency-Key": "pc-1"}
	var created classJSON
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/priority-classes", op, body, key).decode(t, &created)
	require.Equal(t, classJSON{Name: "batch", Value: -100, Preemptible: true, GraceSeconds: 60, Description: "may be displaced",
		Version: 1, Position: created.Position}, created)
	require.Regexp(t, positionPattern, created.Position)
	var replay classJSON
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/priority-classes", op, body, key).decode(t, &replay)
	require.Equal(t, created, replay, "the key replays the first answer")
	s.fails(t, 422, core.CodeIdempotencyKeyReused, http.MethodPost, "/v1/priority-classes", op,
		`{"name":"batch","value":7}`, key)
	e := s.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPost, "/v1/priority-classes", op, `{"name":"batch","value":7}`, nil)
	require.Contains(t, e.Message, "batch already exists")
	s.fails(t, http.StatusForbidden, core.CodePermissionDenied, http.MethodPost, "/v1/priority-classes", s.member,
		`{"name":"mine","value":7}`, nil)
	e = s.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPost, "/v1/priority-classes", op, `{"name":"x"}`, nil)
	require.Contains(t, e.Message, `"value"`)
	s.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPost, "/v1/priority-classes", op,
		`{"name":"x","value":1,"priority":2}`, nil)
	require.Equal(t, 1, s.countRows(t, "SELECT count(*) FROM outbox WHERE type = $1", core.EventPriorityClassCreated))

	// Every role reads the classes.
	var page struct {
		Items      []classJSON `json:"items"`
		NextCursor string      `json:"nextCursor"`
	}
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/priority-classes", s.viewer, nil, nil).decode(t, &page)
	require.Len(t, page.Items, 2)
	require.Equal(t, "batch", page.Items[0].Name)
	require.Equal(t, classJSON{Name: "standard", Value: 0, Preemptible: false, GraceSeconds: 30,
		Description: "The default class: never preempted.", IsDefault: true, Version: 1}, page.Items[1])
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/priority-classes?limit=1", s.member, nil, nil).decode(t, &page)
	require.Len(t, page.Items, 1)
	require.NotEmpty(t, page.NextCursor)
	var one classJSON
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/priority-classes/batch", s.member, nil, nil).decode(t, &one)
	require.Equal(t, -100, one.Value)
	require.Equal(t, 60, one.GraceSeconds)
	s.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodGet, "/v1/priority-classes/gold", s.member, nil, nil)

	// acme may use the default class only, until the operator allows batch.
	var tc tenantClassesJSON
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/acme/priority-classes", s.member, nil, nil).decode(t, &tc)
	require.Equal(t, tenantClassesJSON{Tenant: "acme", Classes: []string{}, DefaultClass: "standard",
		Allowed: []string{"standard"}}, tc)
	s.fails(t, http.StatusForbidden, core.CodePermissionDenied, http.MethodPut, "/v1/tenants/acme/priority-classes", s.member,
		`{"classes":["batch"]}`, nil)
	e = s.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPut, "/v1/tenants/acme/priority-classes", op,
		`{"classes":["batch","gold"]}`, nil)
	require.Contains(t, e.Message, "priority class gold does not exist")
	s.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPut, "/v1/tenants/acme/priority-classes", op, `{}`, nil)
	s.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodPut, "/v1/tenants/initech/priority-classes", op,
		`{"classes":["batch"]}`, nil)
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/priority-classes", op, `{"classes":["batch"]}`, nil).decode(t, &tc)
	require.Equal(t, []string{"batch"}, tc.Classes)
	require.Equal(t, []string{"batch", "standard"}, tc.Allowed)
	require.EqualValues(t, 1, tc.Version)
	require.Regexp(t, positionPattern, tc.Position)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/acme/priority-classes", s.viewer, nil, nil).decode(t, &tc)
	require.Equal(t, []string{"batch", "standard"}, tc.Allowed)
	s.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodGet, "/v1/tenants/ops/priority-classes", s.member, nil, nil)

	// A reservation of the class.
	req := s.reservationBody(t, 1)
	req["priorityClass"] = "batch"
	var rsv struct {
		ID            string `json:"id"`
		PriorityClass string `json:"priorityClass"`
		Priority      int    `json:"priority"`
		Preemptible   bool   `json:"preemptible"`
		Position      string `json:"position"`
	}
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", s.member, req, nil).decode(t, &rsv)
	require.Equal(t, "batch", rsv.PriorityClass)
	require.Equal(t, -100, rsv.Priority)
	require.True(t, rsv.Preemptible)
	var plain map[string]any
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", s.member, s.reservationBody(t, 1), nil).decode(t, &plain)
	require.Equal(t, "standard", plain["priorityClass"])
	require.EqualValues(t, 0, plain["priority"])
	require.Equal(t, false, plain["preemptible"])

	s.catchUp(t, plain["position"].(string))
	var got map[string]any
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations/"+rsv.ID, s.viewer, nil, nil).decode(t, &got)
	require.Equal(t, "batch", got["priorityClass"])
	require.EqualValues(t, -100, got["priority"])
	require.Equal(t, true, got["preemptible"])
	var list struct {
		Items []map[string]any `json:"items"`
	}
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations", s.member, nil, nil).decode(t, &list)
	require.Len(t, list.Items, 2)
	classes := map[string]any{}
	for _, it := range list.Items {
		classes[it["id"].(string)] = it["priorityClass"]
	}
	require.Equal(t, map[string]any{rsv.ID: "batch", plain["id"].(string): "standard"}, classes)

	var data []byte
	require.NoError(t, s.pg.Pool.QueryRow(context.Background(), "SELECT data FROM outbox WHERE type = $1 AND subject = $2",
		core.EventReservationBooked, core.ReservationSubject(rsv.ID)).Scan(&data))
	var ev map[string]any
	require.NoError(t, json.Unmarshal(data, &ev))
	require.Equal(t, "batch", ev["priorityClass"])
	require.EqualValues(t, -100, ev["priority"])
	require.Equal(t, true, ev["preemptible"])
}

// The bad inputs of a reservation's class over HTTP: each answers its
// status, code and reason, and writes nothing: no reservation, the quota
// as it was, no event.
func TestReservationPriorityClassBadInputOverHTTP(t *testing.T) {
	t.Parallel()
	s := setupClasses(t)
	op := s.operator
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/priority-classes", op, `{"name":"batch","value":-100,"preemptible":true}`, nil)
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/priority-classes", op, `{"name":"vip","value":5000}`, nil)
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/priority-classes", op, `{"classes":["batch"]}`, nil)
	quotas := func() string {
		return string(s.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/acme/quotas", s.member, nil, nil).body)
	}
	quotasBefore := quotas()
	eventsBefore := s.countRows(t, "SELECT count(*) FROM outbox")

	for name, tc := range map[string]struct {
		extra   map[string]any
		status  int
		code    core.Code
		mention string
	}{
		"unknown class":                {map[string]any{"priorityClass": "gold"}, http.StatusBadRequest, core.CodeInvalidArgument, "priority class gold does not exist"},
		"class the tenant may not use": {map[string]any{"priorityClass": "vip"}, http.StatusForbidden, core.CodePermissionDenied, "priority class vip"},
		"not preempted, preemptible":   {map[string]any{"priorityClass": "batch", "preemptible": false}, http.StatusBadRequest, core.CodeInvalidArgument, "batch is preemptible"},
		"preempted, not preemptible":   {map[string]any{"preemptible": true}, http.StatusBadRequest, core.CodeInvalidArgument, "standard is not preemptible"},
		"class of the wrong type":      {map[string]any{"priorityClass": 7}, http.StatusBadRequest, core.CodeInvalidArgument, `"priorityClass"`},
	} {
		for _, hdr := range []map[string]string{nil, {"Idempotency-Key": "bad-" + name}} {
			body := s.reservationBody(t, 1)
			for k, v := range tc.extra {
				body[k] = v
			}
			e := s.fails(t, tc.status, tc.code, http.MethodPost, "/v1/reservations", s.member, body, hdr)
			require.Contains(t, e.Message, tc.mention, name)
		}
	}
	require.Zero(t, s.countReservations(t, "acme"), "no reservation was written")
	require.JSONEq(t, quotasBefore, quotas(), "the quota is as it was")
	require.Equal(t, eventsBefore, s.countRows(t, "SELECT count(*) FROM outbox"), "no event was appended")

	// The same request with a class acme may use books.
	body := s.reservationBody(t, 1)
	body["priorityClass"], body["preemptible"] = "batch", true
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", s.member, body, nil)
	require.Equal(t, 1, s.countReservations(t, "acme"))
}
