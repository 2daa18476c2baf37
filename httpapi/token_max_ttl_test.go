package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
)

// With COMPUTE_MAX_TOKEN_TTL set, a token asked for over the API without an
// expiry, or with a later one, is 400 TOKEN_LIFETIME_EXCEEDED naming the
// latest expiry allowed, and nothing is issued: the request is refused, not
// quietly shortened. One within it is issued as asked.
func TestMaxTokenLifetime(t *testing.T) {
	t.Parallel()
	const maxTTL = 30 * 24 * time.Hour
	s := setupWith(t, func(d *httpapi.Deps) {
		d.Commands = commands.New(d.Pool, commands.Config{MaxTokenTTL: maxTTL})
	})
	now := s.pg.Now(t)
	latest := now.Add(maxTTL)

	requireExpiriesRefused(t, s, s.operator, "capped", core.CodeTokenLifetimeExceeded, "COMPUTE_MAX_TOKEN_TTL", latest,
		map[string]string{
			"no expiry":      "",
			"a second later": latest.Add(time.Second).Format(time.RFC3339Nano),
			"a year":         now.AddDate(1, 0, 0).Format(time.RFC3339Nano),
		})

	for name, at := range map[string]time.Time{"at the maximum": latest, "within it": now.Add(time.Hour)} {
		var created tokenJSON
		s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator, map[string]string{
			"tenant": "capped", "identity": "ci", "role": "member", "expiresAt": at.Format(time.RFC3339Nano)}, &created)
		require.NotNil(t, created.ExpiresAt, name)
		require.True(t, created.ExpiresAt.Equal(at), "%s: as asked, %s", name, created.ExpiresAt)
	}

	// The maximum runs from each request's business time.
	s.pg.AdvanceSimClock(t, time.Hour)
	s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator, map[string]string{
		"tenant": "capped", "identity": "later", "role": "member", "expiresAt": latest.Add(time.Hour).Format(time.RFC3339Nano)}, nil)
}
