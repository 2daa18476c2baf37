package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// A route that mints a credential and keeps no answer for an
// Idempotency-Key refuses one: a client retrying under a key believes it
// gets one credential, and would otherwise get a second live secret for
// every retry, the lost ones unknown to it and never revoked. Refused
// before anything is written, and the same request without a key works.
// A node's join mints its daemon's credential (bcn_…) and took a key and
// dropped it: every retry under one key minted another credential and
// superseded the one before.
// Stream tickets and webhook signing secrets are minted too: both routes
// took a key and dropped it, so a "safe" retry of rotate-secret rotated
// again, and a second rotation ends the secret the consumer still checks
// with at once (docs/concepts/webhooks.md), the failed deliveries the
// 24-hour overlap exists to prevent.
func TestCredentialMintingRefusesIdempotencyKey(t *testing.T) {
	t.Parallel()
	s := newAPIServer(t, time.Second)
	count := func(query string) int {
		t.Helper()
		var n int
		require.NoError(t, s.pg.Pool.QueryRow(t.Context(), query).Scan(&n))
		return n
	}
	// The tenant an operator registers an endpoint for must exist; issuing
	// it a token would create it, but the tokens of keyed are counted below.
	_, err := s.pg.Pool.Exec(t.Context(), "INSERT INTO tenants (id) VALUES ('keyed')")
	require.NoError(t, err)
	// A pool for the node that joins, new, under POST /v1/nodes/{id}/join.
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/sites", s.operator, `{"id":"fra1","name":"Frankfurt 1"}`, nil)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/pools", s.operator, `{"id":"metal","siteId":"fra1","kind":"bare-metal"}`, nil)
	var ep struct{ ID, Secret string }
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/webhook-endpoints", s.operator,
		map[string]string{"url": "https://hooks.keyed.example/in", "tenant": "keyed"}, &ep)
	for _, tc := range []struct {
		target, route, body, count string
		status                     int
	}{
		{"/v1/tokens", "/v1/tokens", `{"tenant":"keyed","identity":"bot","role":"viewer"}`,
			"SELECT count(*) FROM api_tokens WHERE tenant_id = 'keyed'", http.StatusCreated},
		{"/v1/nodes/node-k/join-tokens", "/v1/nodes/{id}/join-tokens", `{}`,
			"SELECT count(*) FROM node_join_tokens WHERE node_id = 'node-k'", http.StatusCreated},
		{"/v1/nodes/node-j/join", "/v1/nodes/{id}/join", `{"poolId":"metal","vcpu":8,"memoryMb":1024,"diskGb":10}`,
			"SELECT count(*) FROM node_credentials WHERE node_id = 'node-j'", http.StatusCreated},
		{"/v1/events/stream-tickets", "/v1/events/stream-tickets", ``,
			"SELECT count(*) FROM stream_tickets", http.StatusCreated},
		{"/v1/webhook-endpoints/" + ep.ID + "/rotate-secret", "/v1/webhook-endpoints/{id}/rotate-secret", ``,
			"SELECT count(*) FROM webhook_endpoints WHERE id = '" + ep.ID + "' AND secret <> '" + ep.Secret + "'", http.StatusOK},
	} {
		send := func(key string) apiResult {
			t.Helper()
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			req, err := rawRequest(http.MethodPost, tc.target, body)
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+s.operator)
			if key != "" {
				req.Header.Set("Idempotency-Key", key)
			}
			return s.serve(req, nil, 20*time.Second)
		}
		for range 3 {
			r := send("retry-me")
			require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", tc.target, r.body)
			var env struct {
				Error struct {
					Code    core.Code
					Message string
				}
			}
			require.NoError(t, json.Unmarshal(r.body, &env))
			require.Equal(t, core.CodeInvalidArgument, env.Error.Code)
			require.Contains(t, env.Error.Message, "Idempotency-Key")
			// The route as the API's documents write it, never echo's :id.
			require.Contains(t, env.Error.Message, "not supported on POST "+tc.route+":", tc.target)
		}
		require.Zero(t, count(tc.count), "%s: nothing minted under a key", tc.target)

		r := send("")
		require.Equal(t, tc.status, r.status, "%s: %s", tc.target, r.body)
		require.Equal(t, 1, count(tc.count), tc.target)
	}
}
