package queries_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/queries"
)

// Pages of the configuration lists join up to the whole list, in key
// order, without repeats, whatever the page size.
func TestConfigListsPageThroughEverything(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, id := range []string{"ams1", "zrh1", "lon1"} {
		_, err := f.h.CreateSite(f.ctx, operator, commands.CreateSite{ID: id, Name: id})
		require.NoError(t, err)
		_, err = f.h.CreatePool(f.ctx, operator, commands.CreatePool{ID: id + "-gpu", SiteID: id, Kind: commands.PoolBareMetal})
		require.NoError(t, err)
	}
	for limit := 1; limit <= 5; limit++ {
		var sites []string
		for cursor := ""; ; {
			page, next, err := f.q.ListSites(f.ctx, tenantA, queries.ListSites{Cursor: cursor, Limit: limit})
			require.NoError(t, err)
			for _, s := range page {
				sites = append(sites, s.ID)
			}
			if cursor = next; cursor == "" {
				break
			}
		}
		require.Equal(t, []string{"ams1", "fra1", "lon1", "zrh1"}, sites, "limit %d", limit)
	}
	pools, next, err := f.q.ListPools(f.ctx, tenantA, queries.ListPools{SiteID: "lon1"})
	require.NoError(t, err)
	require.Empty(t, next)
	require.Len(t, pools, 1)
	require.Equal(t, "lon1-gpu", pools[0].ID)

	_, _, err = f.q.ListPools(f.ctx, tenantA, queries.ListPools{Limit: queries.MaxLimit + 1})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err))
	_, _, err = f.q.ListSites(f.ctx, tenantA, queries.ListSites{Cursor: queries.EncodeCursor("pool", "x")})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "a pool cursor is no site cursor")
}

// Tokens issued in one instant (the simulated clock stands still) still
// page in a stable order, by id after creation time, each exactly once.
func TestTokenListPagesThroughTies(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tokens := &commands.Tokens{Pool: f.d.Pool}
	want := map[string]bool{}
	for _, who := range []string{"a", "b", "c", "d", "e"} {
		created, err := tokens.CreateToken(f.ctx, operator, "acme", who+"@acme", core.RoleViewer)
		require.NoError(t, err)
		want[created.ID] = true
	}
	_, err := tokens.CreateToken(f.ctx, operator, "globex", "x@globex", core.RoleViewer)
	require.NoError(t, err)

	seen := map[string]bool{}
	var prev queries.Token
	for cursor := ""; ; {
		page, next, err := f.q.ListTokens(f.ctx, tenantA, queries.ListTokens{Cursor: cursor, Limit: 2, Tenant: "globex"})
		require.NoError(t, err)
		for _, tok := range page {
			require.Equal(t, "acme", tok.Tenant, "a tenant cannot widen its scope")
			require.False(t, seen[tok.ID], "%s twice", tok.ID)
			seen[tok.ID] = true
			require.True(t, prev.CreatedAt.Before(tok.CreatedAt) || prev.ID < tok.ID, "ordered")
			prev = tok
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	require.Equal(t, want, seen)

	all, _, err := f.q.ListTokens(f.ctx, operator, queries.ListTokens{Limit: queries.MaxLimit})
	require.NoError(t, err)
	require.Len(t, all, 6)
	_, _, err = f.q.ListTokens(f.ctx, operator, queries.ListTokens{Cursor: queries.EncodeCursor("token", "yesterday", "tok_x")})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err))
}

// Quotas: a tenant reads its own, with what its reservations use; another
// tenant's, or an unknown one, is NOT_FOUND with the same message.
func TestQuotasAreTheTenantsOwn(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 2)
	f.reserve(t, tenantA, 0, 2)

	items, _, err := f.q.ListQuotas(f.ctx, tenantA, queries.ListQuotas{Tenant: "acme"})
	require.NoError(t, err)
	used := map[string]int64{}
	for _, q := range items {
		used[q.Resource] = q.Used
	}
	require.Equal(t, int64(1), used["gpu"])
	require.Zero(t, used["vcpu"])

	_, _, errB := f.q.ListQuotas(f.ctx, tenantA, queries.ListQuotas{Tenant: "globex"})
	_, _, errU := f.q.ListQuotas(f.ctx, tenantA, queries.ListQuotas{Tenant: "nobody"})
	require.Equal(t, core.CodeNotFound, core.CodeOf(errB))
	require.Equal(t, core.CodeNotFound, core.CodeOf(errU))
	_, _, err = f.q.ListQuotas(f.ctx, operator, queries.ListQuotas{Tenant: "globex"})
	require.NoError(t, err)
}

// A reservation's detail: the spec and charges of the write model, and its
// allocation once placed.
func TestReservationDetail(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 1)
	booked := f.reserve(t, tenantA, 0, 2)
	pending, err := f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, VCPU: 2,
		Start: at(0), End: at(2)})
	require.NoError(t, err)
	require.Equal(t, core.ReservationPending, pending.Reservation.State)
	f.catchUp(t, pending.Position)

	got, err := f.q.GetReservation(f.ctx, tenantA, booked.Reservation.ID, outbox.Position{})
	require.NoError(t, err)
	require.Equal(t, booked.Reservation.Spec, got.Spec)
	require.Equal(t, booked.Reservation.Charges, got.Charges)
	require.NotNil(t, got.Allocation)
	require.Equal(t, "n1", got.Allocation.NodeID)
	require.Equal(t, got.DeviceIDs, got.Allocation.DeviceIDs)

	got, err = f.q.GetReservation(f.ctx, tenantA, pending.Reservation.ID, outbox.Position{})
	require.NoError(t, err)
	require.Nil(t, got.Allocation)
	require.Equal(t, map[string]int64{"gpu": 1, "vcpu": 2}, got.Charges)
	require.Equal(t, int64(2), got.Spec.VCPU)

	_, err = f.q.GetReservation(f.ctx, tenantB, pending.Reservation.ID, outbox.Position{})
	require.Equal(t, core.CodeNotFound, core.CodeOf(err))
}
