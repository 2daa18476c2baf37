package gateway_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/lease"
)

var tenant = core.Actor{Tenant: "acme", Identity: "bob@acme", Role: core.RoleMember}

func (f *fixture) reserve(gpus int) commands.ReservationResult {
	f.t.Helper()
	now := f.d.Now(f.t)
	res, err := f.h.CreateReservation(f.ctx, tenant, commands.CreateReservation{PoolID: "metal", GPUs: gpus,
		VCPU: 4, MemoryMB: 1024, DiskGB: 10, Start: now, End: now.Add(24 * time.Hour)})
	require.NoError(f.t, err)
	return res
}

// Disconnected is not dead: nothing is released on disconnect or
// unreachable; an unreachable node only leaves placement.
func TestNothingReleasedAndUnreachableLeavesPlacement(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.join("n1", "metal")
	f.gateway("gw1")
	s := f.open("n1", "gw1", "j1")
	booked := f.reserve(1)
	require.Equal(t, core.ReservationBooked, booked.Reservation.State)
	require.Equal(t, "n1", booked.Reservation.NodeID)

	require.NoError(t, f.s.NodeSessions().CloseNodeSession(f.ctx, "n1", s.Epoch, 0))
	f.advance(commands.NoSessionAfter)
	f.requireState("n1", core.NodeUnreachable)

	got, err := f.h.GetReservation(f.ctx, tenant, booked.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, got.State, "the reservation keeps its state")
	require.Equal(t, booked.Reservation.DeviceIDs, got.DeviceIDs, "and its devices")

	// The node's other GPU is free, but the node is out of placement.
	pending := f.reserve(1)
	require.Equal(t, core.ReservationPending, pending.Reservation.State)
	require.Contains(t, pending.Reservation.Conditions[0].Message, "unreachable")

	// Back online: placement sees it again.
	f.open("n1", "gw1", "j1")
	require.NoError(t, f.h.RetryPending(f.ctx, pending.Reservation.ID))
	got, err = f.h.GetReservation(f.ctx, tenant, pending.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, got.State)
	f.requireInvariants()
}

// A gateway that lost the session to a newer one (the daemon reconnected
// elsewhere) can neither mark nor route to the node.
func TestZombieGatewayCannotMarkOrRoute(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.join("n1", "metal")
	f.gateway("old")
	f.gateway("new")
	zombie := f.open("n1", "old", "j1")
	f.advance(30 * time.Second)
	current := f.open("n1", "new", "j1")
	require.Equal(t, zombie.Epoch+1, current.Epoch)
	seenBefore := *f.session("n1").LastSeenAt

	// A liveness flush at the old epoch touches nothing.
	touched, err := f.s.NodeSessions().RecordNodeLiveness(f.ctx, f.gateways["old"], "old", []commands.SeenAge{{NodeID: "n1", Epoch: zombie.Epoch}})
	require.NoError(t, err)
	require.Empty(t, touched)
	require.Equal(t, seenBefore, *f.session("n1").LastSeenAt)
	// Even with the current epoch, another gateway's flush touches nothing.
	touched, err = f.s.NodeSessions().RecordNodeLiveness(f.ctx, f.gateways["old"], "old", []commands.SeenAge{{NodeID: "n1", Epoch: current.Epoch}})
	require.NoError(t, err)
	require.Empty(t, touched)

	// Closing at the old epoch does not disconnect the node.
	err = f.s.NodeSessions().CloseNodeSession(f.ctx, "n1", zombie.Epoch, 0)
	require.True(t, errors.Is(err, commands.ErrSessionSuperseded), "%v", err)
	f.requireState("n1", core.NodeConnected)

	// Routing at the old epoch is refused; at the current one it locks.
	tx, err := f.d.Pool.Begin(f.ctx)
	require.NoError(t, err)
	_, err = commands.LockForDispatch(f.ctx, tx, "n1", zombie.Epoch)
	require.True(t, errors.Is(err, commands.ErrSessionSuperseded))
	require.NoError(t, tx.Rollback(f.ctx))
	tx, err = f.d.Pool.Begin(f.ctx)
	require.NoError(t, err)
	journal, err := commands.LockForDispatch(f.ctx, tx, "n1", current.Epoch)
	require.NoError(t, err)
	require.Equal(t, "j1", journal)
	require.NoError(t, tx.Rollback(f.ctx))

	// The old gateway dying does not disconnect a node it no longer holds.
	f.killGateway("old")
	f.advance(time.Minute)
	f.requireState("n1", core.NodeConnected)

	// And a gateway whose lease lapsed cannot open sessions at all.
	_, err = f.s.NodeSessions().OpenNodeSession(f.ctx, commands.OpenNodeSession{NodeID: "n1", Gateway: lease.Lease{Name: gateway.GatewayLeaseName("old"),
		Owner: "old-process", Epoch: 1}, GatewayID: "old", JournalID: "j1"})
	require.ErrorIs(t, err, lease.ErrFenced)
	require.Equal(t, current.Epoch, f.session("n1").SessionEpoch)
}

// Gateways report ages; the database computes the time. A gateway whose
// clock is hours off, or that claims to have heard from a daemon in the
// future, cannot move last_seen_at past compute_now().
func TestSkewedGatewayCannotFakeLiveness(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.join("n1", "metal")
	f.gateway("gw1")
	s := f.open("n1", "gw1", "j1")
	f.advance(10 * time.Second)

	touched, err := f.s.NodeSessions().RecordNodeLiveness(f.ctx, f.gateways["gw1"], "gw1",
		[]commands.SeenAge{{NodeID: "n1", Epoch: s.Epoch, Age: 3200 * time.Millisecond}})
	require.NoError(t, err)
	require.Equal(t, []string{"n1"}, touched)
	now := f.d.Now(t)
	require.WithinDuration(t, now.Add(-3200*time.Millisecond), *f.session("n1").LastSeenAt, 0)

	// "Last seen in an hour" from a clock running ahead: at most now.
	_, err = f.s.NodeSessions().RecordNodeLiveness(f.ctx, f.gateways["gw1"], "gw1",
		[]commands.SeenAge{{NodeID: "n1", Epoch: s.Epoch, Age: -time.Hour}})
	require.NoError(t, err)
	require.WithinDuration(t, now, *f.session("n1").LastSeenAt, 0)

	// An old age never moves last_seen_at back.
	_, err = f.s.NodeSessions().RecordNodeLiveness(f.ctx, f.gateways["gw1"], "gw1",
		[]commands.SeenAge{{NodeID: "n1", Epoch: s.Epoch, Age: time.Hour}})
	require.NoError(t, err)
	require.WithinDuration(t, now, *f.session("n1").LastSeenAt, 0)
}

// A daemon that lost its journal shows up with a new journal id.
func TestNewJournalIsReported(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.join("n1", "metal")
	f.gateway("gw1")
	first := f.open("n1", "gw1", "j1")
	require.False(t, first.JournalChanged)
	again := f.open("n1", "gw1", "j2")
	require.True(t, again.JournalChanged)
	require.Equal(t, "j1", again.PreviousJournalID)
}

// A credential speaks for exactly its node; a retired node's do not work.
func TestCredentialsNameOneNode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c1 := f.join("n1", "metal")
	c2 := f.join("n2", "metal")
	id, _, err := f.s.NodeSessions().AuthenticateNodeCredential(f.ctx, c1.Token)
	require.NoError(t, err)
	require.Equal(t, "n1", id)
	id, _, err = f.s.NodeSessions().AuthenticateNodeCredential(f.ctx, c2.Token)
	require.NoError(t, err)
	require.Equal(t, "n2", id)
	_, _, err = f.s.NodeSessions().AuthenticateNodeCredential(f.ctx, c1.Token+"x")
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err))
	_, err = f.s.JoinNode(f.ctx, tenant, "n1")
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err))
}
