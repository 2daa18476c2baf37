package httpapi_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
)

// rateHeaders reads the RateLimit-* headers of a response.
func rateHeaders(t *testing.T, r response) (limit, remaining, reset int) {
	t.Helper()
	var err error
	limit, err = strconv.Atoi(r.header.Get("RateLimit-Limit"))
	require.NoError(t, err, "RateLimit-Limit %q", r.header.Get("RateLimit-Limit"))
	remaining, err = strconv.Atoi(r.header.Get("RateLimit-Remaining"))
	require.NoError(t, err, "RateLimit-Remaining")
	reset, err = strconv.Atoi(r.header.Get("RateLimit-Reset"))
	require.NoError(t, err, "RateLimit-Reset")
	return limit, remaining, reset
}

// Each token has its own bucket: burst requests at once, then the rate.
// Every response says where the bucket stands; the first request past it
// is 429 RATE_LIMITED with Retry-After, and other tokens are unaffected.
func TestRateLimitPerToken(t *testing.T) {
	t.Parallel()
	// One request per 1,000 s after a burst of 3: nothing refills during
	// the test.
	s := setupWith(t, func(d *httpapi.Deps) { d.RateLimit, d.RateBurst = 0.001, 3 })
	_, member := s.tokenFor(t, "acme", "bob@acme", core.RoleMember) // the operator's 1st request

	for want := 1; want >= 0; want-- {
		r := s.call(t, http.MethodGet, "/v1/whoami", s.operator, nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		limit, remaining, reset := rateHeaders(t, r)
		require.Equal(t, 3, limit)
		require.Equal(t, want, remaining)
		require.InDelta(t, (3-want)*1000, reset, 5, "seconds until the bucket is full again")
	}
	r := s.call(t, http.MethodGet, "/v1/whoami", s.operator, nil)
	require.Equal(t, http.StatusTooManyRequests, r.status, "body: %s", r.body)
	require.Equal(t, core.CodeRateLimited, r.errorBody(t).Code)
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err)
	require.InDelta(t, 1000, retry, 1, "one request's worth of refill")
	_, remaining, _ := rateHeaders(t, r)
	require.Zero(t, remaining)
	// Refused requests are refused whatever the route, errors included.
	r = s.call(t, http.MethodGet, "/v1/no-such-route", s.operator, nil)
	require.Equal(t, http.StatusTooManyRequests, r.status, "body: %s", r.body)

	// Another token has a bucket of its own.
	r = s.call(t, http.MethodGet, "/v1/whoami", member, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	_, remaining, _ = rateHeaders(t, r)
	require.Equal(t, 2, remaining)
	// And so does the address's failure limit: a 429 for a token is no
	// failed authentication, an unknown token is no draw on anyone's bucket.
	r = s.call(t, http.MethodGet, "/v1/whoami", "bc_unknown", nil)
	require.Equal(t, http.StatusUnauthorized, r.status, "body: %s", r.body)
	require.Empty(t, r.header.Get("RateLimit-Limit"), "no token, no bucket")
}

// A bucket refills at the configured rate: after Retry-After, the token
// may call again.
func TestRateLimitRefills(t *testing.T) {
	t.Parallel()
	s := setupWith(t, func(d *httpapi.Deps) { d.RateLimit, d.RateBurst = 20, 1 })
	require.Equal(t, http.StatusOK, s.call(t, http.MethodGet, "/v1/whoami", s.operator, nil).status)
	r := s.call(t, http.MethodGet, "/v1/whoami", s.operator, nil)
	if r.status == http.StatusTooManyRequests { // unless 50 ms passed in between on a slow machine
		require.Equal(t, "1", r.header.Get("Retry-After"), "whole seconds, at least 1")
	}
	// One request per 50 ms: poll until the token gets in again.
	require.Eventually(t, func() bool {
		return s.call(t, http.MethodGet, "/v1/whoami", s.operator, nil).status == http.StatusOK
	}, 10*time.Second, 10*time.Millisecond)
}

// With the limit off (the zero Deps, COMPUTE_RATE_LIMIT=0) there are no
// RateLimit headers and no 429 for volume.
func TestRateLimitOff(t *testing.T) {
	t.Parallel()
	s := setup(t)
	for range 30 {
		r := s.call(t, http.MethodGet, "/v1/whoami", s.operator, nil)
		require.Equal(t, http.StatusOK, r.status)
		require.Empty(t, r.header.Get("RateLimit-Limit"))
		require.Empty(t, r.header.Get("RateLimit-Remaining"))
	}
}
