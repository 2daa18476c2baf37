package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

func names(ls []lease.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Name
	}
	return out
}

// A member above its share gives the surplus up, and can then no longer
// act under it: its fence fails, and the member that takes the lease holds
// it at the next epoch. Busy leases are kept first; a busy surplus one is
// kept but drains (Keep false) until it is idle.
func TestBalanceGivesSurplusUpAndFencesIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	g := lease.Group{Names: []string{"part:0", "part:1", "part:2", "part:3", "part:4"}, MemberPrefix: "member:"}

	a, err := g.Balance(ctx, d.Q, "a", nil, true, lease.TTL)
	require.NoError(t, err)
	require.Equal(t, g.Names, names(a.Held), "a lone member takes every lease")
	require.Equal(t, []int{1, 5}, []int{a.Members, a.Target})

	b, err := g.Balance(ctx, d.Q, "b", nil, true, lease.TTL)
	require.NoError(t, err)
	require.Empty(t, b.Held, "nothing is free yet")
	require.Equal(t, []int{2, 2}, []int{b.Members, b.Target}, "5 over 2: the first member in owner order gets 3")

	// a runs work under part:2, part:3 and part:4: it keeps those (busy
	// first) and gives the idle rest up.
	busy := []string{"part:2", "part:3", "part:4"}
	a, err = g.Balance(ctx, d.Q, "a", busy, true, lease.TTL)
	require.NoError(t, err)
	require.Equal(t, []int{2, 3}, []int{a.Members, a.Target})
	require.Equal(t, busy, names(a.Held), "the idle surplus (part:0, part:1) is given up, the busy leases are kept")
	require.Equal(t, []bool{true, true, true}, a.Keep)

	// A third member joins: the shares become 2, 2 and 1, and a, still
	// busy under three leases, drains the one beyond its share.
	c, err := g.Balance(ctx, d.Q, "c", nil, true, lease.TTL)
	require.NoError(t, err)
	require.Equal(t, []int{3, 1}, []int{c.Members, c.Target})
	require.Equal(t, []string{"part:0"}, names(c.Held), "c takes a free lease up to its share")
	b, err = g.Balance(ctx, d.Q, "b", nil, true, lease.TTL)
	require.NoError(t, err)
	require.Equal(t, []string{"part:1"}, names(b.Held), "b takes what is left free; it is below its share of 2")

	old := a.Held[2] // part:4
	a, err = g.Balance(ctx, d.Q, "a", busy, true, lease.TTL)
	require.NoError(t, err)
	require.Equal(t, []int{3, 2}, []int{a.Members, a.Target})
	require.Equal(t, busy, names(a.Held), "busy leases are never given up")
	require.Equal(t, []bool{true, true, false}, a.Keep, "part:4 is beyond a's share: it drains")

	a, err = g.Balance(ctx, d.Q, "a", busy[:2], true, lease.TTL)
	require.NoError(t, err)
	require.Equal(t, busy[:2], names(a.Held), "idle, part:4 is given up")
	require.ErrorIs(t, fencedWrite(ctx, t, d, old), lease.ErrFenced, "a cannot act under a lease it gave up")

	b, err = g.Balance(ctx, d.Q, "b", nil, true, lease.TTL)
	require.NoError(t, err)
	require.Equal(t, []string{"part:1", "part:4"}, names(b.Held))
	require.Equal(t, old.Epoch+1, b.Held[1].Epoch, "taking it over increments the epoch")
	require.NoError(t, fencedWrite(ctx, t, d, b.Held[1]))
	require.ErrorIs(t, fencedWrite(ctx, t, d, old), lease.ErrFenced)
}

// A member's busy lease that lapsed (its renewals were late) and that no
// one took is renewed at its epoch by a balance that takes nothing, as the
// lease keeper's is, so the work running under it still completes; an
// idle one that lapsed is left for whoever takes free leases.
func TestBalanceRenewsALapsedBusyLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	g := lease.Group{Names: []string{"part:0", "part:1"}, MemberPrefix: "member:"}
	a, err := g.Balance(ctx, d.Q, "a", nil, true, lease.TTL)
	require.NoError(t, err)
	require.Len(t, a.Held, 2)
	busy := a.Held[1]

	d.AdvanceSimClock(t, lease.TTL+time.Second)
	a, err = g.Balance(ctx, d.Q, "a", []string{"part:1"}, false, lease.TTL)
	require.NoError(t, err)
	require.Equal(t, []string{"part:1"}, names(a.Held), "the busy lease is renewed, the idle one not taken back")
	require.Equal(t, busy.Epoch, a.Held[0].Epoch)
	require.NoError(t, fencedWrite(ctx, t, d, busy), "work under the busy lease still completes")
}
