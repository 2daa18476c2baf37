package commands_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// A key reused with a different request is IDEMPOTENCY_KEY_REUSED even
// when that request is also invalid: the caller hears that it keyed
// another request before what is wrong with this one. A fresh key with the
// same invalid request is still INVALID_ARGUMENT, and the key still
// replays its own request's answer.
func TestKeyReusedWithAnInvalidRequest(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	start, end := window(0, 2)
	valid := commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, Start: start, End: end, IdempotencyKey: "k1"}
	first, err := f.h.CreateReservation(f.ctx, tenantA, valid)
	require.NoError(t, err)

	invalid := valid
	invalid.GPUs = -1
	_, err = f.h.CreateReservation(f.ctx, tenantA, invalid)
	require.Equal(t, core.CodeIdempotencyKeyReused, core.CodeOf(err), "%v", err)

	invalid.IdempotencyKey = "k2"
	_, err = f.h.CreateReservation(f.ctx, tenantA, invalid)
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%v", err)

	replay, err := f.h.CreateReservation(f.ctx, tenantA, valid)
	require.NoError(t, err)
	require.Equal(t, first.Reservation.ID, replay.Reservation.ID, "the key keeps its answer")

	// The same for the other keyed writes whose validation runs first.
	_, err = f.h.CreateSite(f.ctx, operator, commands.CreateSite{ID: "ams1", Name: "Amsterdam", IdempotencyKey: "s1"})
	require.NoError(t, err)
	_, err = f.h.CreateSite(f.ctx, operator, commands.CreateSite{ID: "ams1", IdempotencyKey: "s1"})
	require.Equal(t, core.CodeIdempotencyKeyReused, core.CodeOf(err), "%v", err)
	_, err = f.h.CreatePool(f.ctx, operator, commands.CreatePool{ID: "p2", SiteID: "ams1", Kind: commands.PoolProvider, IdempotencyKey: "p1"})
	require.NoError(t, err)
	_, err = f.h.CreatePool(f.ctx, operator, commands.CreatePool{ID: "p2", SiteID: "ams1", Kind: "cloud", IdempotencyKey: "p1"})
	require.Equal(t, core.CodeIdempotencyKeyReused, core.CodeOf(err), "%v", err)
}
