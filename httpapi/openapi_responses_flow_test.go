package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands/commandstest"
)

// Every answer of a realistic session holds to docs/openapi.yaml, checked
// the way a strictly decoding generated client checks it (contract.check):
// an operator builds a site, a pool and nodes and sets quotas; a tenant
// books, waits, reads, pages, extends, releases and cancels, runs an
// instance and a node command, manages tokens and webhook endpoints, pages
// events and usage windows; fair share and priority classes are set and
// read; and errors of every kind come back.
func TestResponsesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	s := newContractServer(t)
	op := s.operator
	ctx := context.Background()
	now := s.pg.Now(t)
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }

	// Operations, tokens and identity.
	s.ok(t, http.StatusOK, http.MethodGet, "/healthz", "", nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/readyz", "", nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/readyz", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/metrics", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/openapi.yaml", "", nil, nil, nil)
	member := s.ok(t, http.StatusCreated, http.MethodPost, "/v1/tokens", op,
		map[string]string{"tenant": "acme", "identity": "alice@acme", "role": "member"}, nil, nil)
	var tok struct{ ID, Token string }
	member.decode(t, &tok)
	alice, aliceID := tok.Token, tok.ID
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/tokens", op,
		map[string]string{"tenant": "acme", "identity": "vic@acme", "role": "viewer", "expiresAt": at(48 * time.Hour)}, nil, &tok)
	viewer, viewerID := tok.Token, tok.ID
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/tokens", op,
		map[string]string{"tenant": "globex", "identity": "hank@globex", "role": "member"}, nil, &tok)
	hank := tok.Token
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/whoami", alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/tokens?limit=2", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/tokens/"+aliceID, alice, nil, nil, nil)

	// The fleet: a site, a pool, two nodes, quotas.
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/sites", op, `{"id":"fra1","name":"Frankfurt 1"}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPatch, "/v1/sites/fra1", op, `{"name":"Frankfurt One"}`, map[string]string{"If-Match": `"1"`}, nil)
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/pools", op, `{"id":"fra1-gpu","siteId":"fra1","kind":"bare-metal","cpuRatio":2}`, nil, nil)
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/nodes", op, `{"id":"n1","poolId":"fra1-gpu",
		"vcpu":64,"memoryMb":524288,"diskGb":2000,
		"gpus":[{"uuid":"GPU-n1-0","model":"a100","memoryMb":81920},
		        {"uuid":"GPU-n1-1","model":"a100","memoryMb":81920,"layout":{"mode":"exclusive"}}]}`, nil, nil)
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/nodes", op, `{"id":"n2","poolId":"fra1-gpu",
		"vcpu":32,"memoryMb":262144,"diskGb":1000}`, nil, nil)
	for res, max := range map[string]int{"gpu": 4, "vcpu": 128, "memory": 1 << 20, "disk": 1000} {
		s.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/"+res, op, map[string]int{"max": max}, nil, nil)
	}
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/gpu", op, map[string]int{"max": 4}, nil, nil) // a no-op
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n2/cordon", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n2/uncordon", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n2/taint", op, `{"key":"maint","value":"yes","effect":"NoSchedule"}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n2/untaint", op, `{"key":"maint","value":"yes","effect":"NoSchedule"}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/devices/GPU-n1-1/health", op, `{"health":"healthy"}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/gpus/GPU-n1-1/mode", op, `{"mode":"exclusive"}`, nil, nil)
	jt := s.ok(t, http.StatusCreated, http.MethodPost, "/v1/nodes/n3/join-tokens", op, nil, nil, nil)
	s.ok(t, http.StatusNoContent, http.MethodDelete, "/v1/nodes/n3/join-tokens/"+idOf(t, jt), op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/nodes/n1/credentials", op, nil, nil, nil)

	// Priority classes and fair share.
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/priority-classes", op,
		`{"name":"batch","value":100,"preemptible":true,"graceSeconds":30,"description":"batch jobs"}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/priority-classes", alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/priority-classes/batch", alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/priority-classes", op, `{"classes":["batch"]}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/acme/priority-classes", alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/acme/fair-share", alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/fair-share", op, `{"share":3}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/acme/fair-share", alice, nil, nil, nil)

	// A suspension: refused to a member, then acme's token is refused
	// (TENANT_SUSPENDED) until the resume.
	s.ok(t, http.StatusForbidden, http.MethodPost, "/v1/tenants/acme/suspend", alice, `{"reason":"x"}`, nil, nil)
	s.ok(t, http.StatusBadRequest, http.MethodPost, "/v1/tenants/acme/suspend", op, `{}`, nil, nil)
	s.ok(t, http.StatusNotFound, http.MethodPost, "/v1/tenants/nobody/suspend", op, `{"reason":"x"}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/tenants/acme/suspend", op, `{"reason":"invoice 2026-11 unpaid"}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/tenants/acme/suspend", op, `{"reason":"again","releaseReservations":true}`, nil, nil)
	s.ok(t, http.StatusForbidden, http.MethodGet, "/v1/tenants/acme/fair-share", alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/acme", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/tenants/acme/resume", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/tenants/acme/resume", op, nil, nil, nil)
	s.ok(t, http.StatusNotFound, http.MethodPost, "/v1/tenants/nobody/resume", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/acme/fair-share", alice, nil, nil, nil)

	// Reservations: booked, pending (n1 taint not tolerated), extended,
	// released, cancelled; read and paged.
	book := func(gpus int, from, to time.Duration, extra map[string]any) map[string]any {
		b := map[string]any{"poolId": "fra1-gpu", "gpus": gpus, "vcpu": 8, "memoryMb": 16384, "start": at(from), "end": at(to)}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	var rsv reservationJSON
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", alice, book(1, 0, 2*time.Hour, nil),
		map[string]string{"Idempotency-Key": "book-1"}, &rsv)
	require.Equal(t, "booked", rsv.State)
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", alice, book(1, 0, 2*time.Hour, nil),
		map[string]string{"Idempotency-Key": "book-1"}, nil) // replayed
	var later reservationJSON
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", alice,
		book(1, 3*time.Hour, 4*time.Hour, map[string]any{"priorityClass": "batch"}), nil, &later)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n1/taint", op, `{"key":"maint","value":"yes","effect":"NoSchedule"}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n2/cordon", op, nil, nil, nil)
	var pending reservationJSON
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", alice, book(1, 0, time.Hour, nil), nil, &pending)
	require.Equal(t, "pending", pending.State)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n1/untaint", op, `{"key":"maint","value":"yes","effect":"NoSchedule"}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n2/uncordon", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/reservations/"+rsv.ID+"/extend", alice, map[string]string{"end": at(150 * time.Minute)},
		map[string]string{"If-Match": `"1"`}, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/reservations/"+pending.ID+"/cancel", alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/reservations/"+later.ID+"/release", alice, nil, nil, nil)
	s.catchUp(t)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations/"+rsv.ID, alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations/"+pending.ID, viewer, nil, nil, nil)
	var page struct {
		Items      []map[string]any `json:"items"`
		NextCursor string           `json:"nextCursor"`
	}
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations?limit=1", alice, nil, nil, &page)
	require.NotEmpty(t, page.NextCursor)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations?limit=1&cursor="+url.QueryEscape(page.NextCursor), alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations?state=booked", alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/usage-windows?limit=1", alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/usage-windows?reservation="+rsv.ID, op, nil, nil, nil)

	// Fleet reads.
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/sites", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/sites/fra1", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/pools", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/pools/fra1-gpu", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/pools/fra1-gpu/capacity", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/nodes", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/nodes/n1", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/devices/GPU-n1-0/holders?at="+url.QueryEscape(at(time.Minute)), op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/acme", alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/acme/quotas", alice, nil, nil, nil)

	// An instance and a node command on the booked reservation, once its
	// window has begun.
	require.NoError(t, commandstest.Activate(ctx, s.h, rsv.ID))
	var alloc string
	require.NoError(t, s.pg.Pool.QueryRow(ctx, "SELECT id FROM allocations WHERE reservation_id = $1", rsv.ID).Scan(&alloc))
	ins := s.ok(t, http.StatusCreated, http.MethodPost, "/v1/instances", alice,
		map[string]any{"reservationId": rsv.ID, "image": "pytorch:2", "command": "python train.py"}, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/instances/"+idOf(t, ins), alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/instances?reservationId="+rsv.ID, alice, nil, nil, nil)
	s.ok(t, http.StatusAccepted, http.MethodDelete, "/v1/instances/"+idOf(t, ins), alice, nil, nil, nil)
	cmd := s.ok(t, http.StatusCreated, http.MethodPost, "/v1/commands", alice,
		map[string]any{"nodeId": rsv.NodeID, "allocationId": alloc, "kind": "exec", "payload": map[string]any{"script": "nvidia-smi"}},
		map[string]string{"Idempotency-Key": "cmd-1"}, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/commands/"+idOf(t, cmd), alice, nil, nil, nil)
	// What a daemon reports, written as its report would leave the rows
	// (no daemon runs here): the fields only a finished job or workload has.
	_, err := s.pg.Pool.Exec(ctx, `UPDATE node_commands SET state = 'succeeded', exit_code = 0,
		output = 'GPU 0: A100', finished_at = compute_now() WHERE id = $1`, idOf(t, cmd))
	require.NoError(t, err)
	_, err = s.pg.Pool.Exec(ctx, `UPDATE instances SET state = 'failed', reason = 'exited with status 2',
		exit_code = 2 WHERE id = $1`, idOf(t, ins))
	require.NoError(t, err)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/commands/"+idOf(t, cmd), alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/instances/"+idOf(t, ins), alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/instances?reservationId="+rsv.ID, alice, nil, nil, nil)

	// Webhook endpoints.
	ep := s.ok(t, http.StatusCreated, http.MethodPost, "/v1/webhook-endpoints", alice,
		map[string]any{"url": "https://hooks.acme.example/in", "eventTypes": []string{"reservation.booked"}, "description": "ops"}, nil, nil)
	epID := idOf(t, ep)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/webhook-endpoints", alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/webhook-endpoints/"+epID, alice, nil, nil, nil)
	s.ok(t, http.StatusAccepted, http.MethodPost, "/v1/webhook-endpoints/"+epID+"/recover", alice, `{"since":"`+at(-time.Hour)+`"}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/webhook-endpoints/"+epID+"/rotate-secret", alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPatch, "/v1/webhook-endpoints/"+epID, alice, `{"enabled":false}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/webhook-endpoints/"+epID+"/attempts", alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodDelete, "/v1/webhook-endpoints/"+epID, alice, nil, nil, nil)

	// Events, paged.
	var events struct {
		Items      []map[string]any `json:"items"`
		NextCursor string           `json:"nextCursor"`
	}
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/events?limit=3", alice, nil, nil, &events)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/events?limit=500&after="+url.QueryEscape(events.NextCursor), alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/events?limit=500&types=reservation.booked", op, nil, nil, nil)
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/events/stream-tickets", alice, nil, nil, nil)

	// Draining, releasing, retiring and quarantining n2, which holds nothing.
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n2/drain", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n2/undrain", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/devices/GPU-n1-0/quarantine", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/devices/GPU-n1-0/unquarantine", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n2/retire", op, nil, nil, nil)

	// Errors of every kind.
	s.fails(t, http.StatusBadRequest, "INVALID_ARGUMENT", http.MethodPost, "/v1/reservations", alice, `{"poolId":`, nil)
	s.fails(t, http.StatusBadRequest, "INVALID_ARGUMENT", http.MethodGet, "/v1/reservations?state=lost", alice, nil, nil)
	s.fails(t, http.StatusBadRequest, "INVALID_ARGUMENT", http.MethodGet, "/v1/events?bogus=1", alice, nil, nil)
	s.fails(t, http.StatusUnauthorized, "UNAUTHENTICATED", http.MethodGet, "/v1/reservations", "", nil, nil)
	s.fails(t, http.StatusUnauthorized, "UNAUTHENTICATED", http.MethodGet, "/v1/whoami", "bc_nonsense", nil, nil)
	s.fails(t, http.StatusUnauthorized, "UNAUTHENTICATED", http.MethodGet, "/metrics", "", nil, nil)
	s.fails(t, http.StatusForbidden, "PERMISSION_DENIED", http.MethodPost, "/v1/sites", alice, `{"id":"x","name":"x"}`, nil)
	s.fails(t, http.StatusForbidden, "PERMISSION_DENIED", http.MethodPost, "/v1/reservations", viewer, book(1, 0, time.Hour, nil), nil)
	s.fails(t, http.StatusNotFound, "NOT_FOUND", http.MethodGet, "/v1/reservations/"+rsv.ID, hank, nil, nil)
	s.fails(t, http.StatusNotFound, "NOT_FOUND", http.MethodGet, "/v1/nodes/nope", op, nil, nil)
	s.fails(t, http.StatusNotFound, "NOT_FOUND", http.MethodPost, "/v1/reservations/rsv_nope/cancel", alice, nil, nil)
	s.fails(t, http.StatusConflict, "CONFLICT", http.MethodPost, "/v1/sites", op, `{"id":"fra1","name":"again"}`, nil)
	s.fails(t, http.StatusConflict, "CONFLICT", http.MethodPost, "/v1/reservations/"+rsv.ID+"/extend", alice,
		map[string]string{"end": at(3 * time.Hour)}, map[string]string{"If-Match": `"1"`})
	s.fails(t, http.StatusConflict, "QUOTA_EXCEEDED", http.MethodPost, "/v1/reservations", alice, book(9, 0, time.Hour, nil), nil)
	s.fails(t, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", http.MethodPost, "/v1/sites", op, `{"id":"x","name":"x"}`,
		map[string]string{"Content-Type": "text/plain"})
	s.fails(t, http.StatusUnprocessableEntity, "IDEMPOTENCY_KEY_REUSED", http.MethodPost, "/v1/reservations", alice,
		book(2, 0, 2*time.Hour, nil), map[string]string{"Idempotency-Key": "book-1"})
	s.fails(t, http.StatusNotFound, "NOT_FOUND", http.MethodDelete, "/v1/webhook-endpoints/"+epID, alice, nil, nil)
	s.ok(t, http.StatusOK, http.MethodDelete, "/v1/tokens/"+viewerID, op, nil, nil, nil)
	s.fails(t, http.StatusUnauthorized, "UNAUTHENTICATED", http.MethodGet, "/v1/whoami", viewer, nil, nil)

	var seen []string
	for k := range s.contract.seen {
		seen = append(seen, k)
	}
	slices.Sort(seen)
	t.Logf("answers checked against docs/openapi.yaml:\n%s", strings.Join(seen, "\n"))
}

// The checker rejects what a strict client rejects: each broken answer to
// GET /v1/whoami (or a 204 route) is reported, and the well-formed one is
// not. Without this a checker that passed everything would look like a
// server that matched the spec.
func TestContractRejectsWhatStrictClientsReject(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	whoami, err := http.NewRequest(http.MethodGet, "http://api.test/v1/whoami", nil)
	require.NoError(t, err)
	deleteJoinToken, err := http.NewRequest(http.MethodDelete, "http://api.test/v1/nodes/n1/join-tokens/jt_1", nil)
	require.NoError(t, err)
	js := http.Header{"Content-Type": {"application/json"}}
	good := `{"tokenId":"tok_1","tenant":"acme","identity":"alice@acme","role":"member"}`
	require.Empty(t, c.mismatches(whoami, response{status: 200, header: js, body: []byte(good)}))
	unauth := http.Header{"Content-Type": {"application/json"}, "Www-Authenticate": {`Bearer realm="compute"`}}
	require.Empty(t, c.mismatches(whoami, response{status: 401, header: unauth, body: []byte(`{"error":{"code":"UNAUTHENTICATED","message":"no"}}`)}))
	require.Empty(t, c.mismatches(deleteJoinToken, response{status: 204, header: http.Header{}}))

	for name, r := range map[string]struct {
		req *http.Request
		res response
	}{
		"a required field missing":  {whoami, response{status: 200, header: js, body: []byte(`{"tokenId":"tok_1","tenant":"acme","identity":"a"}`)}},
		"null, not nullable":        {whoami, response{status: 200, header: js, body: []byte(`{"tokenId":"tok_1","tenant":"acme","identity":"a","role":null}`)}},
		"an enum value not listed":  {whoami, response{status: 200, header: js, body: []byte(`{"tokenId":"tok_1","tenant":"acme","identity":"a","role":"admin"}`)}},
		"a number for a string":     {whoami, response{status: 200, header: js, body: []byte(`{"tokenId":1,"tenant":"acme","identity":"a","role":"member"}`)}},
		"an undocumented status":    {whoami, response{status: 418, header: js, body: []byte(good)}},
		"an undocumented type":      {whoami, response{status: 200, header: http.Header{"Content-Type": {"text/plain"}}, body: []byte(good)}},
		"not the error envelope":    {whoami, response{status: 401, header: unauth, body: []byte(`{"error":"no"}`)}},
		"an envelope with more":     {whoami, response{status: 401, header: unauth, body: []byte(`{"error":{"code":"UNAUTHENTICATED","message":"no","hint":"x"}}`)}},
		"an error code not listed":  {whoami, response{status: 401, header: unauth, body: []byte(`{"error":{"code":"NOPE","message":"no"}}`)}},
		"a body where none is":      {deleteJoinToken, response{status: 204, header: js, body: []byte(`{}`)}},
		"a required header missing": {whoami, response{status: 401, header: js, body: []byte(`{"error":{"code":"UNAUTHENTICATED","message":"no"}}`)}},
	} {
		require.NotEmpty(t, c.mismatches(r.req, r.res), name)
	}
}
