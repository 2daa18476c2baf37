package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/authn"
)

// ticketFor asks for a stream ticket with token.
func (s *eventServer) ticketFor(t *testing.T, token string) (ticket string, expiresAt time.Time) {
	t.Helper()
	r := s.call(t, http.MethodPost, "/v1/events/stream-tickets", token, nil)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, "no-store", r.header.Get("Cache-Control"))
	var out struct {
		Ticket    string    `json:"ticket"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	r.decode(t, &out)
	require.NotEmpty(t, out.Ticket)
	return out.Ticket, out.ExpiresAt
}

// ticketStream opens GET /v1/events/stream?ticket=…&<query> as a browser's
// EventSource would: no Authorization header. On 200 it reads event data
// until stop accepts the events seen (nil: at once; 10 s at most); on any
// other status it returns the error body.
func (s *eventServer) ticketStream(t *testing.T, ticket, query string, stop func([]core.Event) bool) (int, []core.Event, []byte) {
	t.Helper()
	if stop == nil {
		stop = func([]core.Event) bool { return true }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	target := s.url + "/v1/events/stream?ticket=" + url.QueryEscape(ticket)
	if query != "" {
		target += "&" + query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, nil, body
	}
	var events []core.Event
	sc := bufio.NewScanner(res.Body)
	for !stop(events) {
		require.True(t, sc.Scan(), "the stream ended or timed out before it showed what the test waits for (%d events): %v", len(events), sc.Err())
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var e core.Event
			require.NoError(t, json.Unmarshal([]byte(data), &e))
			events = append(events, e)
		}
	}
	return res.StatusCode, events, nil
}

// A ticket opens one stream, once, without a bearer header, with the scope
// of the token that asked for it: a tenant's ticket streams only that
// tenant's events.
func TestStreamTicketOpensOneStreamWithTheTokensScope(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, time.Hour)
	_, acme := s.tokenFor(t, "acme", "bob@acme", core.RoleViewer)
	theirs := s.appendEvent(t, "globex", core.EventReservationBooked)
	mine := s.appendEvent(t, "acme", core.EventReservationBooked)
	fleet := s.appendEvent(t, "", core.EventNodeCordoned)
	last := s.appendEvent(t, "acme", core.EventReservationReleased)

	ticket, expiresAt := s.ticketFor(t, acme)
	require.Regexp(t, `^st_[A-Za-z0-9_-]{43}$`, ticket)
	require.True(t, expiresAt.Equal(s.pg.Now(t).Add(commands.StreamTicketTTL)), "expires %s after business now", commands.StreamTicketTTL)
	require.LessOrEqual(t, commands.StreamTicketTTL, 60*time.Second)

	status, events, body := s.ticketStream(t, ticket, "after=", func(es []core.Event) bool {
		return len(es) > 0 && es[len(es)-1].ID == last
	})
	require.Equal(t, http.StatusOK, status, "body: %s", body)
	var ids []string
	for _, e := range events {
		require.Equal(t, "acme", e.TenantID, "a tenant's ticket streams its own events only")
		ids = append(ids, e.ID.String())
	}
	require.Equal(t, []string{mine.String(), last.String()}, ids)
	require.NotContains(t, ids, theirs.String())
	require.NotContains(t, ids, fleet.String())

	// Used: the second redemption is 401, like a ticket never issued.
	status, _, body = s.ticketStream(t, ticket, "after=", nil)
	require.Equal(t, http.StatusUnauthorized, status, "body: %s", body)
	var env struct{ Error struct{ Code core.Code } }
	require.NoError(t, json.Unmarshal(body, &env))
	require.Equal(t, core.CodeUnauthenticated, env.Error.Code)

	// An operator's ticket has the operator's scope: every tenant.
	opTicket, _ := s.ticketFor(t, s.operator)
	status, events, body = s.ticketStream(t, opTicket, "after=", func(es []core.Event) bool {
		return len(es) > 0 && es[len(es)-1].ID == last
	})
	require.Equal(t, http.StatusOK, status, "body: %s", body)
	require.Len(t, events, 4, "globex's, acme's and the fleet's events")
}

// A ticket expires on the business clock, and is refused once its token is
// revoked; a malformed or unknown ticket is 401 like any bad credential.
func TestStreamTicketExpiresAndDiesWithItsToken(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, time.Hour)
	tokenID, acme := s.tokenFor(t, "acme", "bob@acme", core.RoleMember)

	ticket, _ := s.ticketFor(t, acme)
	s.pg.AdvanceSimClock(t, commands.StreamTicketTTL+time.Second)
	status, _, body := s.ticketStream(t, ticket, "", nil)
	require.Equal(t, http.StatusUnauthorized, status, "expired: %s", body)

	// Just inside its lifetime, it still works.
	ticket, _ = s.ticketFor(t, acme)
	s.pg.AdvanceSimClock(t, commands.StreamTicketTTL-time.Second)
	status, _, body = s.ticketStream(t, ticket, "", func([]core.Event) bool { return true })
	require.Equal(t, http.StatusOK, status, "not yet expired: %s", body)

	ticket, _ = s.ticketFor(t, acme)
	s.mustCall(t, http.StatusOK, http.MethodDelete, "/v1/tokens/"+tokenID, s.operator, nil, nil)
	status, _, body = s.ticketStream(t, ticket, "", nil)
	require.Equal(t, http.StatusUnauthorized, status, "its token was revoked: %s", body)

	for _, bad := range []string{"st_nope", strings.Repeat("x", 4000), "bc_" + strings.Repeat("A", 43), "st_" + strings.Repeat("A", 43)} {
		status, _, body = s.ticketStream(t, bad, "", nil)
		require.Equal(t, http.StatusUnauthorized, status, "%q: %s", bad, body)
	}
	// Without a ticket and without a token, the stream is 401 as before.
	r := s.call(t, http.MethodGet, "/v1/events/stream", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.status, "body: %s", r.body)
}

// Only the event stream takes a ticket: anywhere else it is no credential
// (and is not used up); with a bearer header the token wins and the ticket
// stays unused.
func TestStreamTicketIsOnlyForTheStream(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, time.Hour)
	_, acme := s.tokenFor(t, "acme", "bob@acme", core.RoleMember)
	ticket, _ := s.ticketFor(t, acme)

	for _, path := range []string{"/v1/whoami", "/v1/events", "/v1/events/stream-tickets"} {
		method := http.MethodGet
		if strings.HasSuffix(path, "tickets") {
			method = http.MethodPost
		}
		r := s.call(t, method, path+"?ticket="+url.QueryEscape(ticket), "", nil)
		require.Equal(t, http.StatusUnauthorized, r.status, "%s %s: %s", method, path, r.body)
	}
	r := s.call(t, http.MethodGet, "/v1/events/stream?after=&ticket="+url.QueryEscape(ticket), "bc_not-a-token", nil)
	require.Equal(t, http.StatusUnauthorized, r.status, "a bad bearer token is not rescued by a ticket: %s", r.body)

	status, _, body := s.ticketStream(t, ticket, "", func([]core.Event) bool { return true })
	require.Equal(t, http.StatusOK, status, "the ticket is still unused: %s", body)
}

// A ticket asked for with a token that expires before the ticket does is
// refused once the token has expired.
func TestStreamTicketOfAnExpiredTokenIsRefused(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, time.Hour)
	expiry := s.pg.Now(t).Add(commands.StreamTicketTTL / 2)
	var created struct {
		Token string `json:"token"`
	}
	s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator,
		map[string]string{"tenant": "acme", "identity": "ci@acme", "role": "viewer", "expiresAt": expiry.Format(time.RFC3339Nano)}, &created)
	ticket, ticketExpiry := s.ticketFor(t, created.Token)
	require.True(t, ticketExpiry.After(expiry), "the ticket outlives the token")
	s.pg.AdvanceSimClock(t, commands.StreamTicketTTL/2)
	status, _, body := s.ticketStream(t, ticket, "", nil)
	require.Equal(t, http.StatusUnauthorized, status, "the token expired: %s", body)
}

// notingAuth is the server's authenticator, recording the expiries it is
// told of.
type notingAuth struct {
	*authn.Authenticator
	mu    sync.Mutex
	noted map[string]time.Duration
}

func (n *notingAuth) NoteExpiry(tokenID string, left time.Duration) {
	n.mu.Lock()
	n.noted[tokenID] = left
	n.mu.Unlock()
	n.Authenticator.NoteExpiry(tokenID, left)
}

// A stream opened with a ticket tells the process's authenticator when the
// ticket's token expires, so that the stream ends with the token there too:
// the process may never have looked the token up (another API process
// issued the ticket).
func TestStreamTicketTellsTheAuthenticatorItsTokensExpiry(t *testing.T) {
	t.Parallel()
	auth := &notingAuth{noted: map[string]time.Duration{}}
	s := setupEventsAdjusted(t, httpapi.EventAPI{Heartbeat: time.Hour}, func(d *httpapi.Deps) {
		auth.Authenticator = d.Auth.(*authn.Authenticator)
		d.Auth = auth
	})
	expiry := s.pg.Now(t).Add(time.Hour)
	var created struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator,
		map[string]string{"tenant": "acme", "identity": "ci@acme", "role": "viewer", "expiresAt": expiry.Format(time.RFC3339Nano)}, &created)
	ticket, _ := s.ticketFor(t, created.Token)
	s.pg.AdvanceSimClock(t, 10*time.Second)
	status, _, body := s.ticketStream(t, ticket, "", nil)
	require.Equal(t, http.StatusOK, status, "body: %s", body)
	auth.mu.Lock()
	defer auth.mu.Unlock()
	require.Equal(t, map[string]time.Duration{created.ID: time.Hour - 10*time.Second}, auth.noted)
}
