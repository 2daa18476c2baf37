package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

// Expired stream tickets go with the next prune even when no ticket is
// issued after them (issuing sweeps expired ones, but only while tickets
// are issued); a ticket still valid stays and redeems. Without the
// stream_tickets step the expired ones stayed for ever.
func TestRetentionPrunesExpiredStreamTickets(t *testing.T) {
	t.Parallel()
	f := setupRetention(t)
	created, err := f.h.Tokens().CreateToken(f.ctx, operator, "acme", "bob@acme", core.RoleViewer)
	require.NoError(t, err)
	actor := core.Actor{TokenID: created.ID, Tenant: "acme", Identity: "bob@acme", Role: core.RoleViewer}
	tickets := f.h.StreamTickets()
	for range 2 {
		_, err := tickets.Issue(f.ctx, actor)
		require.NoError(t, err)
	}
	f.d.AdvanceSimClock(t, 20*time.Second)
	fresh, err := tickets.Issue(f.ctx, actor) // the first two have not expired: nothing swept
	require.NoError(t, err)
	f.d.AdvanceSimClock(t, 15*time.Second) // the first two expired, fresh has 15 s left; nothing issued since
	require.Equal(t, 3, f.count(t, "SELECT count(*) FROM stream_tickets"))

	res := f.prune(t)
	require.Equal(t, int64(2), res.StreamTickets)
	require.Equal(t, 1, f.count(t, "SELECT count(*) FROM stream_tickets"))
	_, err = tickets.Redeem(f.ctx, fresh.Ticket)
	require.NoError(t, err, "the ticket still valid was kept")
}

// A join token that was never used goes once it has been unusable
// (expired or revoked) for the work retention: a DELETE of it then answers
// NOT_FOUND. A used one stays (it records the join that issued a node
// credential), and so does one still usable. Without
// the node_join_tokens step every join token stayed for ever.
func TestRetentionPrunesUnusableJoinTokens(t *testing.T) {
	t.Parallel()
	f := setupRetention(t)
	f.node(t, "n1", exclusive)
	issue := func(ttl time.Duration) commands.JoinToken {
		jt, err := f.h.CreateJoinToken(f.ctx, operator, "n1", ttl)
		require.NoError(t, err)
		return jt
	}
	expired := issue(time.Hour)
	revoked := issue(time.Hour)
	require.NoError(t, f.h.RevokeJoinToken(f.ctx, operator, "n1", revoked.ID))
	used := issue(time.Hour)
	_, err := f.h.JoinNodeWithToken(f.ctx, used.Token, "n1")
	require.NoError(t, err)
	present := func() []string {
		rows, err := f.d.Pool.Query(f.ctx, "SELECT id FROM node_join_tokens ORDER BY created_at, id")
		require.NoError(t, err)
		var ids []string
		for rows.Next() {
			var id string
			require.NoError(t, rows.Scan(&id))
			ids = append(ids, id)
		}
		require.NoError(t, rows.Err())
		return ids
	}
	all := present()
	require.Len(t, all, 3)

	// Revoked 7 days ago less a minute, expired less than that: all stay.
	f.d.AdvanceSimClock(t, testRetention.Work-time.Minute)
	require.Zero(t, f.prune(t).JoinTokens)
	require.Equal(t, all, present())

	// Revoked more than 7 days ago; expired 7 days less 59 minutes ago.
	f.d.AdvanceSimClock(t, 2*time.Minute)
	require.Equal(t, int64(1), f.prune(t).JoinTokens)
	require.NotContains(t, present(), revoked.ID)
	require.Equal(t, core.CodeNotFound, core.CodeOf(f.h.RevokeJoinToken(f.ctx, operator, "n1", revoked.ID)))

	f.d.AdvanceSimClock(t, time.Hour)
	usable := issue(time.Hour)
	require.Equal(t, int64(1), f.prune(t).JoinTokens)
	left := present()
	require.NotContains(t, left, expired.ID)
	require.Contains(t, left, used.ID, "a used join token records its join")
	require.Contains(t, left, usable.ID, "still usable")
	_, err = f.h.CheckJoinToken(f.ctx, usable.Token, "n1")
	require.NoError(t, err)
	require.NoError(t, f.h.RevokeJoinToken(f.ctx, operator, "n1", used.ID), "used: nothing to do, not NOT_FOUND")
}

// The fleet read model's row of a reservation that ended goes once its
// events have been pruned; a live reservation's row stays however old, and
// so does an ended one's while an event of it is retained (a replay of it
// must still meet the row's version). Without the rm_fleet_allocations
// step every ended reservation kept its row for ever.
func TestRetentionPrunesEndedFleetAllocations(t *testing.T) {
	t.Parallel()
	f := setupRetention(t)
	f.node(t, "n1", exclusive, exclusive)
	var sinks []outbox.TxSink
	for _, p := range projections.All() {
		sinks = append(sinks, p)
	}
	group := outbox.NewTxGroup(f.d.Pool, "dispatcher", sinks, nil)
	apply := func() {
		t.Helper()
		require.Eventually(t, func() bool {
			n, err := group.RunOnce(f.ctx)
			require.NoError(t, err)
			return n == 0
		}, 10*time.Second, 10*time.Millisecond)
	}
	now := f.d.Now(t)
	ended := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: now.Add(time.Hour), End: now.Add(2 * time.Hour)})
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: ended.Reservation.ID})
	require.NoError(t, err)
	live := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: now.Add(time.Hour), End: now.Add(40 * day)})
	rows := func() map[string]bool {
		t.Helper()
		out := map[string]bool{}
		r, err := f.d.Pool.Query(f.ctx, "SELECT reservation_id, live FROM rm_fleet_allocations")
		require.NoError(t, err)
		for r.Next() {
			var id string
			var l bool
			require.NoError(t, r.Scan(&id, &l))
			out[id] = l
		}
		require.NoError(t, r.Err())
		return out
	}
	both := map[string]bool{ended.Reservation.ID: false, live.Reservation.ID: true}
	// The events become visible to the dispatcher once every older
	// transaction in the cluster (other tests') has ended.
	require.Eventually(t, func() bool {
		apply()
		return len(rows()) == 2
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, both, rows())

	f.d.AdvanceSimClock(t, 29*day)
	f.event(t)
	apply()
	require.Zero(t, f.prune(t).FleetAllocations, "its events are retained")
	require.Equal(t, both, rows())

	f.d.AdvanceSimClock(t, 2*day)
	f.event(t)
	apply()
	res := f.prune(t)
	require.Positive(t, res.Events)
	require.Equal(t, int64(1), res.FleetAllocations)
	require.Equal(t, map[string]bool{live.Reservation.ID: true}, rows())

	// A rebuild does not bring the ended row back: its seed skips an
	// ended reservation with no event left, as nothing can replay over it.
	_, err = projections.Rebuild(f.ctx, f.d.Pool, projections.NameFleet)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{live.Reservation.ID: true}, rows())
}
