package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

func TestExtendInsertsTheAddedSegment(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	a := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}) // [0h, 2h)
	s, e := window(3, 4)
	f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, Start: s, End: e})

	_, n3 := window(0, 3)
	ext, err := f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: a.Reservation.ID, NewEnd: n3})
	require.NoError(t, err, "[2h, 3h) touches [3h, 4h) without overlapping")
	require.Equal(t, int64(2), ext.Reservation.Version)
	require.Equal(t, n3, ext.Reservation.End)

	_, n5 := window(0, 5)
	_, err = f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: a.Reservation.ID, NewEnd: n5})
	require.Equal(t, core.CodeConflict, core.CodeOf(err))
	require.Contains(t, err.Error(), "booked by another reservation")

	_, err = f.h.ExtendReservation(f.ctx, tenantB, commands.ExtendReservation{ReservationID: a.Reservation.ID, NewEnd: n5})
	require.Equal(t, core.CodeNotFound, core.CodeOf(err), "another tenant's reservation does not exist for it")

	_, err = f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: a.Reservation.ID, NewEnd: n5, IfVersion: 1})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "stale If-Match")
	f.requireInvariants(t)
}

func TestCordonKeepsBookingsOffAndBlocksExtension(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	a := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	n, err := f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n1"})
	require.NoError(t, err)
	require.True(t, n.Cordoned)
	require.Equal(t, int64(2), n.Version)

	p := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	require.Equal(t, core.ReservationPending, p.Reservation.State)
	require.Contains(t, p.Reservation.Conditions[0].Message, "n1: cordoned")
	_, e := window(0, 3)
	_, err = f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: a.Reservation.ID, NewEnd: e})
	require.Equal(t, core.CodeConflict, core.CodeOf(err))

	// A taint the request does not tolerate keeps it off too; uncordon alone
	// is not enough, the toleration is.
	_, err = f.h.TaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "maintenance"})
	require.NoError(t, err)
	_, err = f.h.UncordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n1"})
	require.NoError(t, err)
	require.ErrorContains(t, f.h.RetryPending(f.ctx, p.Reservation.ID), "run again")
	got, err := f.h.GetReservation(f.ctx, tenantA, p.Reservation.ID)
	require.NoError(t, err)
	require.Contains(t, got.Conditions[0].Message, "taint maintenance")
	tol := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Tolerations: []string{"maintenance"}})
	require.Equal(t, core.ReservationBooked, tol.Reservation.State)
	require.Equal(t, 2, f.countEvents(t, core.EventReservationBooked))
	f.requireInvariants(t)
}

func TestReleaseRefundsAndRetryBooksThePending(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	a := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 16})
	p := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, VCPU: 16})
	require.Equal(t, core.ReservationPending, p.Reservation.State)

	_, err := f.h.CancelReservation(f.ctx, tenantA, commands.CancelReservation{ReservationID: a.Reservation.ID})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "only pending reservations are cancelled")
	require.ErrorContains(t, err, "reservation "+a.Reservation.ID+" is booked and cannot become cancelled: "+
		"cancel withdraws a pending reservation; release a booked or active one")

	f.d.AdvanceSimClock(t, 30*time.Minute)
	rel, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: a.Reservation.ID})
	require.NoError(t, err)
	require.Equal(t, core.ReservationReleased, rel.Reservation.State)
	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: a.Reservation.ID})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "released once")
	require.ErrorContains(t, err, "reservation "+a.Reservation.ID+" is released and cannot become released")
	q, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota("acme", "gpu"))
	require.NoError(t, err)
	require.Zero(t, q.Used)
	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: a.Reservation.ID})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "released is terminal")

	require.NoError(t, f.h.RetryPending(f.ctx, p.Reservation.ID))
	got, err := f.h.GetReservation(f.ctx, tenantB, p.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, got.State)
	require.Equal(t, int64(2), got.Version)
	require.Empty(t, got.Conditions)
	f.requireInvariants(t)

	// Cancel a fresh pending one: its quota comes back.
	p2 := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1})
	_, err = f.h.CancelReservation(f.ctx, tenantB, commands.CancelReservation{ReservationID: p2.Reservation.ID})
	require.NoError(t, err)
	q, err = f.d.Q.QuotaUsageGet(f.ctx, dbQuota("globex", "gpu"))
	require.NoError(t, err)
	require.Equal(t, int64(1), q.Used)
	f.requireInvariants(t)
}

func TestExpiryFollowsTheSimulatedClock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	a := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 4}) // [0h, 2h)
	require.ErrorContains(t, commandstest.Expire(f.ctx, f.h, a.Reservation.ID), "run again", "not yet")
	require.NoError(t, commandstest.Activate(f.ctx, f.h, a.Reservation.ID))
	got, err := f.h.GetReservation(f.ctx, tenantA, a.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationActive, got.State)

	f.d.AdvanceSimClock(t, 2*time.Hour)
	require.NoError(t, commandstest.Expire(f.ctx, f.h, a.Reservation.ID))
	got, err = f.h.GetReservation(f.ctx, tenantA, a.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationExpired, got.State)
	require.Equal(t, int64(3), got.Version)
	require.NoError(t, commandstest.Expire(f.ctx, f.h, a.Reservation.ID), "expiring twice is a no-op")
	f.requireInvariants(t)
}

func TestSetModeWaitsForAnEmptyGPU(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive)
	a := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	mig := core.GPULayout{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "3g.40gb"}}
	_, err := f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: gpus[0], Layout: mig})
	require.Equal(t, core.CodeConflict, core.CodeOf(err))
	require.Contains(t, err.Error(), "booked now or later")

	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: a.Reservation.ID})
	require.NoError(t, err)
	d, err := f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: gpus[0], Layout: mig})
	require.NoError(t, err)
	require.Equal(t, core.GPUMIG, d.Mode)
	require.Equal(t, int64(2), d.Version)
	again, err := f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: gpus[0], Layout: mig})
	require.NoError(t, err)
	require.Equal(t, int64(2), again.Version, "the same layout is a no-op")

	r := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, MIGProfile: "3g.40gb"})
	require.Equal(t, []string{gpus[0] + "/mig-0", gpus[0] + "/mig-1"}, r.Reservation.DeviceIDs)
	_, err = f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: gpus[0] + "/mig-0", Layout: mig})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "modes apply to whole GPUs")
	f.requireInvariants(t)
}

func TestQuarantineAndHealthKeepAGPUOut(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive, exclusive)
	_, err := f.h.QuarantineDevice(f.ctx, operator, commands.QuarantineDevice{DeviceID: gpus[0]})
	require.NoError(t, err)
	_, err = f.h.SetDeviceHealth(f.ctx, operator, commands.SetDeviceHealth{DeviceID: gpus[1], Healthy: false})
	require.NoError(t, err)
	p := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	require.Equal(t, core.ReservationPending, p.Reservation.State)
	_, err = f.h.UnquarantineDevice(f.ctx, operator, commands.QuarantineDevice{DeviceID: gpus[0]})
	require.NoError(t, err)
	require.NoError(t, f.h.RetryPending(f.ctx, p.Reservation.ID))
	got, err := f.h.GetReservation(f.ctx, tenantA, p.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, []string{gpus[0]}, got.DeviceIDs)
	f.requireInvariants(t)
}

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	s, e := window(0, 1)
	cmd := commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, Start: s, End: e, IdempotencyKey: "k1"}
	first, err := f.h.CreateReservation(f.ctx, tenantA, cmd)
	require.NoError(t, err)
	replay, err := f.h.CreateReservation(f.ctx, tenantA, cmd)
	require.NoError(t, err)
	require.Equal(t, first, replay, "the stored response is replayed")
	require.Equal(t, 1, f.countEvents(t, core.EventReservationBooked))

	other := cmd
	other.GPUs = 2
	_, err = f.h.CreateReservation(f.ctx, tenantA, other)
	require.Equal(t, core.CodeIdempotencyKeyReused, core.CodeOf(err))

	sameKeyOtherIdentity := tenantA
	sameKeyOtherIdentity.Identity = "dave@acme"
	third, err := f.h.CreateReservation(f.ctx, sameKeyOtherIdentity, cmd)
	require.NoError(t, err, "keys are scoped to (tenant, identity, key)")
	require.NotEqual(t, first.Reservation.ID, third.Reservation.ID)

	// Final errors are replayed too, and keys expire after the TTL.
	f.quota(t, "globex", "gpu", 0)
	_, err = f.h.CreateReservation(f.ctx, tenantB, cmd)
	require.Equal(t, core.CodeQuotaExceeded, core.CodeOf(err))
	f.quota(t, "globex", "gpu", 5)
	_, err = f.h.CreateReservation(f.ctx, tenantB, cmd)
	require.Equal(t, core.CodeQuotaExceeded, core.CodeOf(err), "the first outcome is replayed")
	f.d.AdvanceSimClock(t, commands.DefaultIdempotencyTTL+time.Second)
	cmd.Start, cmd.End = f.d.Now(t), f.d.Now(t).Add(time.Hour)
	_, err = f.h.CreateReservation(f.ctx, tenantB, cmd)
	require.NoError(t, err, "an expired key is free again")
	f.requireInvariants(t)
}
