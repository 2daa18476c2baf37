package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The answers TestResponsesMatchOpenAPI's session does not meet hold to
// docs/openapi.yaml too: shared GPUs and what they book, a node joining
// with a join token, a method the route lacks, a body over the limit, HEAD,
// the event stream's head, writes that change nothing, and the 429 of an
// address that keeps failing authentication.
func TestResponsesMatchOpenAPIEdges(t *testing.T) {
	t.Parallel()
	s := newContractServer(t)
	op := s.operator
	now := s.pg.Now(t)
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	var tok struct{ ID, Token string }
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/tokens", op,
		map[string]string{"tenant": "acme", "identity": "alice@acme", "role": "member"}, nil, &tok)
	alice := tok.Token

	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/sites", op, `{"id":"fra1","name":"Frankfurt 1"}`, nil, nil)
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/pools", op, `{"id":"fra1-gpu","siteId":"fra1","kind":"bare-metal"}`, nil, nil)
	jt := s.ok(t, http.StatusCreated, http.MethodPost, "/v1/nodes/n1/join-tokens", op, nil, nil, nil)
	var join struct{ Token string }
	jt.decode(t, &join)
	var joined struct{ CredentialID string }
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/nodes/n1/join", join.Token, `{"poolId":"fra1-gpu","vcpu":64,"memoryMb":524288,"diskGb":2000,
		"gpus":[{"uuid":"GPU-a","model":"a100","memoryMb":81920},{"uuid":"GPU-b","model":"a100","memoryMb":81920},
		        {"uuid":"GPU-c","model":"a100","memoryMb":81920}]}`, nil, &joined)
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/nodes/n1/join", op, `{}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/nodes/n1/credentials", op, nil, nil, nil)
	s.ok(t, http.StatusNoContent, http.MethodDelete, "/v1/nodes/n1/credentials/"+joined.CredentialID, op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/gpus/GPU-a/mode", op, `{"mode":"mig","mig":["3g.40gb","3g.40gb"]}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/gpus/GPU-b/mode", op, `{"mode":"time-slice","slots":4}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/gpus/GPU-c/mode", op, `{"mode":"mps","slots":2}`, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPut, "/v1/gpus/GPU-c/mode", op, `{"mode":"mps","slots":2}`, nil, nil) // no-op
	for res, max := range map[string]int{"gpu": 8, "vcpu": 64, "memory": 1 << 20, "disk": 100} {
		s.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/"+res, op, map[string]int{"max": max}, nil, nil)
	}
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n1/cordon", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n1/cordon", op, nil, nil, nil) // no-op
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n1/uncordon", op, nil, nil, nil)

	book := func(extra string) string {
		return `{"poolId":"fra1-gpu","vcpu":2,"memoryMb":1024,"diskGb":1,"start":"` + at(0) + `","end":"` + at(time.Hour) + `"` + extra + `}`
	}
	var mig, slot, pending reservationJSON
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", alice, book(`,"gpus":1,"migProfile":"3g.40gb"`), nil, &mig)
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", alice, book(`,"gpus":1,"slotKind":"time-slice","gpuModel":"a100"`), nil, &slot)
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", alice, book(`,"gpus":1,"migProfile":"7g.80gb",
		"tolerations":[{"key":"maint","value":"yes","effect":"NoSchedule"}]`), nil, &pending)
	s.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", alice, book(``), nil, nil) // CPU only
	s.catchUp(t)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations/"+mig.ID, alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations/"+pending.ID, alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations?limit=500&tenant=acme", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations?state=pending", alice, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/nodes/n1", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/nodes?pool=fra1-gpu", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/pools/fra1-gpu/capacity", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/devices/GPU-a%2Fmig-0/holders?at="+url.QueryEscape(at(time.Minute)), op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/usage-windows?limit=500", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/events?limit=500", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n1/drain", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodPost, "/v1/nodes/n1/release", op, nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodGet, "/v1/reservations/"+mig.ID+"?minPosition=", alice, nil, nil, nil)

	// HEAD, a method a route lacks, a body over the limit, a stream's head.
	s.ok(t, http.StatusOK, http.MethodHead, "/openapi.yaml", "", nil, nil, nil)
	s.ok(t, http.StatusOK, http.MethodHead, "/healthz", "", nil, nil, nil)
	s.send(t, http.MethodHead, "/v1/reservations/"+mig.ID, alice, nil, nil) // 405: /v1 has no HEAD
	s.fails(t, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", http.MethodDelete, "/v1/whoami", alice, nil, nil)
	s.fails(t, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", http.MethodPut, "/v1/reservations/"+mig.ID, alice, `{}`, nil)
	s.fails(t, http.StatusRequestEntityTooLarge, "INVALID_ARGUMENT", http.MethodPost, "/v1/sites", op,
		`{"id":"x","name":"`+strings.Repeat("x", 8<<10)+`"}`, nil)
	s.streamHead(t, "/v1/events/stream", alice)

	// Refusals every route can give: a query parameter it does not take
	// and a body where it takes none (400), a body over the limit (413).
	ep := s.ok(t, http.StatusCreated, http.MethodPost, "/v1/webhook-endpoints", alice, `{"url":"https://hooks.acme.example/in"}`, nil, nil)
	epID := idOf(t, ep)
	big := `{"description":"` + strings.Repeat("x", 8<<10) + `"}`
	for _, c := range []struct{ method, path, token, body string }{
		{http.MethodGet, "/v1/whoami?dryRun=true", alice, ""},
		{http.MethodGet, "/v1/tokens/" + tok.ID + "?dryRun=true", alice, ""},
		{http.MethodDelete, "/v1/tokens/" + tok.ID + "?dryRun=true", op, ""},
		{http.MethodGet, "/v1/nodes/n1/credentials?dryRun=true", op, ""},
		{http.MethodGet, "/v1/webhook-endpoints/" + epID + "?dryRun=true", alice, ""},
		{http.MethodDelete, "/v1/webhook-endpoints/" + epID + "?dryRun=true", alice, ""},
		{http.MethodPost, "/v1/webhook-endpoints/" + epID + "/rotate-secret", alice, `{"force":true}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := s.send(t, c.method, c.path, c.token, body, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "%s %s: %s", c.method, c.path, r.body)
	}
	for _, c := range []struct{ method, path, token string }{
		{http.MethodPost, "/v1/nodes/n1/join", op},
		{http.MethodPatch, "/v1/webhook-endpoints/" + epID, alice},
		{http.MethodPost, "/v1/webhook-endpoints/" + epID + "/recover", alice},
	} {
		s.fails(t, http.StatusRequestEntityTooLarge, "INVALID_ARGUMENT", c.method, c.path, c.token, big, nil)
	}

	// An address that keeps failing authentication.
	var limited response
	for range 40 {
		limited = s.send(t, http.MethodGet, "/v1/whoami", "bc_wrong", nil, nil)
		if limited.status == http.StatusTooManyRequests {
			break
		}
		require.Equal(t, http.StatusUnauthorized, limited.status, "body: %s", limited.body)
	}
	require.Equal(t, http.StatusTooManyRequests, limited.status)
	s.fails(t, http.StatusTooManyRequests, "RATE_LIMITED", http.MethodPost, "/v1/nodes/n9/join", "bcj_wrong", `{}`, nil)
}

// streamHead opens an event stream, checks the status and headers of its
// answer against the spec (the body never ends), and closes it.
func (s *contractServer) streamHead(t *testing.T, path, token string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	s.contract.check(t, req, response{status: res.StatusCode, header: res.Header})
}
