package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// A recover's since is read as every other time of the API (parseTime):
// Go's JSON decoder, which read it before, took an offset of +05:60 or
// +24:00 and a comma before the fraction (an hour or a day away from what
// was meant), a time of the year 10000 in UTC, and refused a lower-case t
// and z, which RFC 3339 allows, with Go's layout in the message.
func TestWebhookRecoverSinceIsReadAsEveryOtherTime(t *testing.T) {
	t.Parallel()
	s := setup(t, webhookRoutes)
	_, member := s.tokenFor(t, "acme", "alice", core.RoleMember)
	r := s.call(t, http.MethodPost, "/v1/webhook-endpoints", member, map[string]any{"url": "https://hooks.acme.example/in"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var created webhookEndpointJSON
	r.decode(t, &created)
	path := "/v1/webhook-endpoints/" + created.ID + "/recover"

	for since, want := range map[string]string{
		"2030-01-01T00:00:00+05:60": `field "since" must be an RFC 3339 time`,
		"2030-01-01T00:00:00+24:00": `field "since" must be an RFC 3339 time`,
		"2030-01-01T00:00:00,5Z":    `field "since" must be an RFC 3339 time`,
		"tomorrow":                  `field "since" must be an RFC 3339 time such as 2026-01-02T15:04:05Z, not "tomorrow"`,
		"9999-12-31T23:59:59-23:59": `field "since" must be a time from year 0 to 9999 in UTC`,
		"2030-06-30T23:59:60Z":      `field "since" is a leap second`,
		"":                          `field "since" is required`,
	} {
		r := s.call(t, http.MethodPost, path, member, map[string]any{"since": since})
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", since, r.body)
		e := r.errorBody(t)
		require.Equal(t, core.CodeInvalidArgument, e.Code, since)
		require.Contains(t, e.Message, want, since)
	}
	r = s.call(t, http.MethodPost, path, member, map[string]any{"since": "2030-01-01t00:00:00z"})
	require.Equal(t, http.StatusAccepted, r.status, "body: %s", r.body)
}
