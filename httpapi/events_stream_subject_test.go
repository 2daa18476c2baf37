package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/httpapi"
)

// watched is the subject the tests of GET /v1/events/stream?subject= follow.
const watched = "reservations/rsv_watched"

// appendOf appends one event of tenant about subject, in its own
// transaction.
func (s *eventServer) appendOf(t *testing.T, tenant, typ, subject string) uuid.UUID {
	t.Helper()
	e, err := core.NewEvent(typ, tenant, subject, map[string]string{"state": typ})
	require.NoError(t, err)
	commandstest.AppendEvents(t, s.pg.Pool, e)
	return e.ID
}

// appendOthers appends n events of tenant's other reservations in one
// transaction: what lies between a watched subject's own events.
func (s *eventServer) appendOthers(t *testing.T, tenant string, n int) {
	t.Helper()
	_, err := s.pg.Pool.Exec(context.Background(), `INSERT INTO outbox (id, type, tenant_id, subject, data)
		SELECT gen_random_uuid(), 'reservation.booked', $1, 'reservations/rsv_other_' || g, '{}'
		  FROM generate_series(1, $2::int) g`, tenant, n)
	require.NoError(t, err)
}

// quietPast reads c's frames until a heartbeat's id has passed cursor,
// failing if an event comes first. A heartbeat's id moves to the broker's
// head only once every event in the stream's scope up to it was sent, so
// a stream that reaches cursor this way was shown nothing up to it.
func (c *sseClient) quietPast(t *testing.T, cursor string) {
	t.Helper()
	deadline := time.After(eventsWait)
	for {
		select {
		case f, ok := <-c.frames:
			require.True(t, ok, "the stream ended")
			require.Empty(t, f.data, "an event reached a stream that may see none: %s", f.data)
			if f.hasID && f.id >= cursor {
				return
			}
		case <-deadline:
			t.Fatalf("no heartbeat past %s within the wait", cursor)
		}
	}
}

// GET /v1/events/stream?subject= streams one subject's events, with the
// history's rules (GET /v1/events?subject=): the caller's own, or every
// tenant's for an operator, narrowed further by ?types=. Another tenant's
// subject streams exactly what a subject never written about does:
// heartbeats, no event. Before, the route refused the parameter, and a
// tenant following one reservation took its whole stream and filtered it.
func TestEventStreamBySubject(t *testing.T) {
	t.Parallel()
	s := setupEventsWith(t, httpapi.EventAPI{Heartbeat: 10 * time.Millisecond})
	_, a := s.tokenFor(t, "tenant-a", "viewer@a", core.RoleViewer)
	_, b := s.tokenFor(t, "tenant-b", "member@b", core.RoleMember)
	q := "subject=" + url.QueryEscape(watched)
	ca := s.openStream(t, a, q, "")
	cops := s.openStream(t, s.operator, q, "")
	ctyped := s.openStream(t, a, q+"&types=reservation.cancelled", "")
	cbOther := s.openStream(t, b, q, "")
	cbNone := s.openStream(t, b, "subject="+url.QueryEscape("reservations/rsv_never"), "")
	for _, c := range []*sseClient{ca, cops, ctyped, cbOther, cbNone} {
		require.Equal(t, http.StatusOK, c.res.StatusCode)
	}
	require.Eventually(t, func() bool { return s.broker.Streams() == 5 }, eventsWait, time.Millisecond)

	pending := s.appendOf(t, "tenant-a", core.EventReservationPending, watched)
	s.appendOf(t, "tenant-a", core.EventReservationBooked, "reservations/rsv_other")
	s.appendOf(t, "tenant-b", core.EventReservationBooked, "reservations/rsv_b")
	cancelled := s.appendOf(t, "tenant-a", core.EventReservationCancelled, watched)

	got, cursors := ca.events(t, 2)
	require.Equal(t, []uuid.UUID{pending, cancelled}, got, "the tenant's own reservation, nothing else of its log")
	got, _ = cops.events(t, 2)
	require.Equal(t, []uuid.UUID{pending, cancelled}, got, "an operator")
	got, _ = ctyped.events(t, 1)
	require.Equal(t, []uuid.UUID{cancelled}, got, "with types")
	// Tenant B, on A's reservation and on one never written about alike:
	// heartbeats whose ids pass A's events, and not one event.
	cbOther.quietPast(t, cursors[1])
	cbNone.quietPast(t, cursors[1])
}

// A subject's stream resumed with Last-Event-ID far behind, across
// thousands of the tenant's events of other subjects, sends exactly the
// subject's events after the cursor, in order, then goes on live. The
// catch-up reads by subject in pages (two events a page here), so each
// page is the subject's next events wherever they lie.
func TestEventStreamBySubjectResumesAcrossAGap(t *testing.T) {
	t.Parallel()
	s := setupEventsBroker(t, httpapi.EventAPI{}, nil, eventstream.BrokerOptions{CatchUpPage: 2})
	_, a := s.tokenFor(t, "tenant-a", "viewer@a", core.RoleViewer)
	q := "subject=" + url.QueryEscape(watched)
	pending := s.appendOf(t, "tenant-a", core.EventReservationPending, watched)

	c1 := s.openStream(t, a, q+"&after=", "") // from the start of the log
	require.Equal(t, http.StatusOK, c1.res.StatusCode)
	got, cursors := c1.events(t, 1)
	require.Equal(t, []uuid.UUID{pending}, got)
	c1.close()
	require.Eventually(t, func() bool { return s.broker.Streams() == 0 }, eventsWait, time.Millisecond)

	var want []uuid.UUID
	s.appendOthers(t, "tenant-a", 1500)
	want = append(want, s.appendOf(t, "tenant-a", core.EventReservationBooked, watched))
	s.appendOthers(t, "tenant-a", 1500)
	s.appendOthers(t, "tenant-b", 100)
	want = append(want, s.appendOf(t, "tenant-a", core.EventReservationActivated, watched))
	s.appendOthers(t, "tenant-a", 10)
	want = append(want, s.appendOf(t, "tenant-a", core.EventReservationExtended, watched))

	// EventSource reconnects to the original URL: the header wins over
	// its ?after=.
	c2 := s.openStream(t, a, q+"&after=", cursors[0])
	require.Equal(t, http.StatusOK, c2.res.StatusCode)
	require.Equal(t, cursors[0], c2.first(t).id)
	got, _ = c2.events(t, 3)
	require.Equal(t, want, got, "the subject's events appended while away, across the gap")
	s.appendOthers(t, "tenant-a", 10)
	released := s.appendOf(t, "tenant-a", core.EventReservationReleased, watched)
	got, _ = c2.events(t, 1)
	require.Equal(t, []uuid.UUID{released}, got, "then live")
}

// Bad filters are 400 INVALID_ARGUMENT before the stream starts, as on
// GET /v1/events: a subject with a control character, one given twice,
// one too long, and an unknown type beside a good subject.
func TestEventStreamBySubjectRejectsBadInput(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, 0)
	_, a := s.tokenFor(t, "tenant-a", "viewer@a", core.RoleViewer)
	q := "subject=" + url.QueryEscape(watched)
	for _, bad := range []string{
		"subject=%0A",
		"subject=a&subject=b",
		"subject=" + strings.Repeat("x", eventstream.MaxSubjectLength+1),
		q + "&types=reservation.boked",
	} {
		c := s.openStream(t, a, bad, "")
		require.Equal(t, http.StatusBadRequest, c.res.StatusCode, bad)
		var body struct{ Error struct{ Code core.Code } }
		require.NoError(t, json.NewDecoder(c.res.Body).Decode(&body), bad)
		require.Equal(t, core.CodeInvalidArgument, body.Error.Code, bad)
	}
	require.Zero(t, s.broker.Streams())
}
