package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
)

// ended reports whether the server has ended c's stream, draining the
// frames that arrived meanwhile.
func (c *sseClient) ended() bool {
	for {
		select {
		case _, ok := <-c.frames:
			if !ok {
				return true
			}
		default:
			return false
		}
	}
}

// Streams are capped per token and per tenant: one past either cap is 429
// RATE_LIMITED with Retry-After, before anything is streamed; closing a
// stream frees its slot.
func TestEventStreamsAreCappedPerTokenAndTenant(t *testing.T) {
	t.Parallel()
	s := setupEventsWith(t, httpapi.EventAPI{Limits: httpapi.StreamLimits{PerToken: 2, PerTenant: 3}})
	_, a1 := s.tokenFor(t, "tenant-a", "one@a", core.RoleMember)
	_, a2 := s.tokenFor(t, "tenant-a", "two@a", core.RoleViewer)
	_, b1 := s.tokenFor(t, "tenant-b", "one@b", core.RoleMember)

	refused := func(token string, why string) {
		t.Helper()
		c := s.openStream(t, token, "", "")
		require.Equal(t, http.StatusTooManyRequests, c.res.StatusCode, why)
		secs, err := strconv.Atoi(c.res.Header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After is whole seconds")
		require.Positive(t, secs)
		var body httpapi.ErrorBody
		require.NoError(t, json.NewDecoder(c.res.Body).Decode(&body))
		require.Equal(t, core.CodeRateLimited, body.Error.Code)
		require.NotEmpty(t, body.Error.Message)
	}
	opened := func(token string) *sseClient {
		t.Helper()
		c := s.openStream(t, token, "", "")
		require.Equal(t, http.StatusOK, c.res.StatusCode)
		c.first(t)
		return c
	}

	first := opened(a1)
	opened(a1)
	refused(a1, "a third stream of the same token")
	opened(a2)
	refused(a2, "a fourth stream of the tenant, from another token")
	opened(b1) // another tenant has its own count
	require.Equal(t, 4, s.broker.Streams())

	first.close()
	require.Eventually(t, func() bool {
		c := s.openStream(t, a1, "", "")
		if c.res.StatusCode == http.StatusOK {
			return true
		}
		require.Equal(t, http.StatusTooManyRequests, c.res.StatusCode)
		return false
	}, eventsWait, 5*time.Millisecond, "the closed stream's slot is free again")
}

// A stream opened with a token ends once the token is revoked (the
// authz_changes feed tells the process), with a last frame saying why
// (`event: error`, UNAUTHENTICATED), so that a client stops rather than
// reconnecting into a 401 as if the network had failed; and the client's
// reconnect is refused.
func TestEventStreamEndsWhenItsTokenIsRevoked(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, 0)
	require.NoError(t, s.auth.Sync(t.Context())) // the feed starts here
	id, member := s.tokenFor(t, "tenant-a", "member@a", core.RoleMember)
	_, other := s.tokenFor(t, "tenant-a", "other@a", core.RoleMember)
	c := s.openStream(t, member, "", "")
	require.Equal(t, http.StatusOK, c.res.StatusCode)
	c.first(t)
	bystander := s.openStream(t, other, "", "")
	require.Equal(t, http.StatusOK, bystander.res.StatusCode)
	bystander.first(t)

	r := s.call(t, http.MethodDelete, "/v1/tokens/"+id, s.operator, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var last sseFrame
	require.Eventually(t, func() bool {
		require.NoError(t, s.auth.Sync(t.Context()))
		for {
			select {
			case f, ok := <-c.frames:
				if !ok {
					return true
				}
				last = f
				continue
			default:
				return false
			}
		}
	}, eventsWait, 5*time.Millisecond, "the revoked token's stream ends")
	require.Equal(t, "error", last.event, "the stream's last frame says why it ended: %+v", last)
	require.False(t, last.hasID, "an error frame moves no resume point")
	var body httpapi.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(last.data), &body), "data: %s", last.data)
	require.Equal(t, core.CodeUnauthenticated, body.Error.Code)
	require.Contains(t, body.Error.Message, "revoked")

	again := s.openStream(t, member, "", "")
	require.Equal(t, http.StatusUnauthorized, again.res.StatusCode)
	// Other tokens' streams go on.
	want := s.appendEvent(t, "tenant-a", "x.created")
	got, _ := bystander.events(t, 1)
	require.Equal(t, want, got[0])
}

// A stream lives at most MaxLifetime; the server then ends it cleanly and
// the client, resuming with Last-Event-ID, gets the events that follow,
// without gap or repeat.
func TestEventStreamEndsAtItsMaximumLifetimeAndResumes(t *testing.T) {
	t.Parallel()
	const lifetime = time.Second
	s := setupEventsWith(t, httpapi.EventAPI{Limits: httpapi.StreamLimits{MaxLifetime: lifetime}})
	_, a := s.tokenFor(t, "tenant-a", "viewer@a", core.RoleViewer)
	want := []uuid.UUID{s.appendEvent(t, "tenant-a", "x.created"), s.appendEvent(t, "tenant-a", "x.created")}

	// Read like EventSource: reconnect with the last id whenever the
	// server ends the stream, until n events arrived.
	lastID := ""
	read := func(n int) []uuid.UUID {
		t.Helper()
		var got []uuid.UUID
		deadline := time.Now().Add(eventsWait)
		for len(got) < n {
			require.True(t, time.Now().Before(deadline), "only %d of %d events", len(got), n)
			query := ""
			if lastID == "" {
				query = "after="
			}
			opened := time.Now()
			c := s.openStream(t, a, query, lastID)
			require.Equal(t, http.StatusOK, c.res.StatusCode)
			for f := range c.frames {
				if f.hasID {
					lastID = f.id
				}
				if f.data != "" && len(got) < n {
					var e core.Event
					require.NoError(t, json.Unmarshal([]byte(f.data), &e))
					got = append(got, e.ID)
				}
			}
			// The server ended the stream, and not before its lifetime.
			require.GreaterOrEqual(t, time.Since(opened), lifetime)
		}
		return got
	}
	require.Equal(t, want, read(2))
	want = append(want, s.appendEvent(t, "tenant-a", "x.deleted"), s.appendEvent(t, "tenant-a", "x.created"))
	require.Equal(t, want[2:], read(2), "the resumed stream continues after the last id")
}
