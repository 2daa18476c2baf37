package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

// GET /v1/events?subject= pages one reservation's history, however many of the tenant's
// events lie between its own; a tenant asking for another tenant's reservation gets an empty
// page, exactly as for one that does not exist. Before, the route refused the parameter and
// the console paged the whole log of reservation events for it, giving up after ten pages:
// a reservation whose events lay further on showed no history.
func TestEventsListBySubject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupEvents(t, 0)
	_, a := s.tokenFor(t, "tenant-a", "viewer@a", core.RoleViewer)
	_, b := s.tokenFor(t, "tenant-b", "member@b", core.RoleMember)
	const subject = "reservations/rsv_a"
	appendSubject := func(tenant, typ string) uuid.UUID {
		e, err := core.NewEvent(typ, tenant, subject, map[string]string{"state": typ})
		require.NoError(t, err)
		commandstest.AppendEvents(t, s.pg.Pool, e)
		return e.ID
	}
	pending := appendSubject("tenant-a", "reservation.pending")
	// Fifteen pages of 100 of the tenant's other reservations' events: more than the console read.
	_, err := s.pg.Pool.Exec(ctx, `INSERT INTO outbox (id, type, tenant_id, subject, data)
		SELECT gen_random_uuid(), 'reservation.booked', 'tenant-a', 'reservations/rsv_' || g, '{}'
		  FROM generate_series(1, 1500) g`)
	require.NoError(t, err)
	cancelled := appendSubject("tenant-a", "reservation.cancelled")
	require.Eventually(t, func() bool { // visible: the frontier is cluster-wide
		return len(s.list(t, s.operator, "types=reservation.cancelled").Items) == 1
	}, eventsWait, 5*time.Millisecond)

	q := "subject=" + url.QueryEscape(subject)
	require.Equal(t, []uuid.UUID{pending, cancelled}, eventIDs(s.list(t, a, q).Items), "the tenant's own reservation")
	require.Equal(t, []uuid.UUID{pending, cancelled}, eventIDs(s.list(t, s.operator, q).Items), "an operator")
	require.Equal(t, []uuid.UUID{cancelled}, eventIDs(s.list(t, a, q+"&types=reservation.cancelled").Items), "with types")
	first := s.list(t, a, q+"&limit=1")
	require.Equal(t, []uuid.UUID{pending}, eventIDs(first.Items))
	require.Equal(t, []uuid.UUID{cancelled}, eventIDs(s.list(t, a, q+"&after="+first.NextCursor).Items), "paged on with after")

	other := s.list(t, b, q)
	require.Empty(t, other.Items, "tenant B reads tenant A's reservation")
	none := s.list(t, b, "subject="+url.QueryEscape("reservations/rsv_none"))
	require.Equal(t, none, other, "another tenant's subject reads as one never written about")

	for _, bad := range []string{"subject=%0A", "subject=a&subject=b"} {
		r := s.call(t, http.MethodGet, "/v1/events?"+bad, a, nil)
		require.Equal(t, http.StatusBadRequest, r.status, bad)
		require.Equal(t, core.CodeInvalidArgument, r.errorBody(t).Code, bad)
	}
}
