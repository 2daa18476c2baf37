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
func TestCredentialMintingRefusesIdempotencyKey(t *testing.T) {
	t.Parallel()
	s := newAPIServer(t, time.Second)
	count := func(query string) int {
		t.Helper()
		var n int
		require.NoError(t, s.pg.Pool.QueryRow(t.Context(), query).Scan(&n))
		return n
	}
	for _, tc := range []struct {
		target, body, count string
	}{
		{"/v1/tokens", `{"tenant":"keyed","identity":"bot","role":"viewer"}`,
			"SELECT count(*) FROM api_tokens WHERE tenant_id = 'keyed'"},
		{"/v1/nodes/node-k/join-tokens", `{}`,
			"SELECT count(*) FROM node_join_tokens WHERE node_id = 'node-k'"},
	} {
		send := func(key string) apiResult {
			t.Helper()
			req, err := rawRequest(http.MethodPost, tc.target, []byte(tc.body))
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
		}
		require.Zero(t, count(tc.count), "%s: nothing minted under a key", tc.target)

		r := send("")
		require.Equal(t, http.StatusCreated, r.status, "%s: %s", tc.target, r.body)
		require.Equal(t, 1, count(tc.count), tc.target)
	}
}
