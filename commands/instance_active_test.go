package commands_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// A workload runs only on an active reservation: a booking whose window has
// not begun may be on devices another tenant holds now. instances.create
// and commands.run on it are CONFLICT, saying when it starts, and write
// nothing; the instance insert itself refuses it, whatever the Go code
// checked. Once the clock reaches the window and the reservation is
// activated, both run; once its end has passed, before the expiry has run,
// both are refused again, saying so.
func TestWorkloadsRunOnlyOnAnActiveReservation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	start, end := window(1, 3)
	rsv := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end}).Reservation
	require.Equal(t, core.ReservationBooked, rsv.State)
	alloc := f.allocationOf(t, rsv.ID)
	written := func() (instances, jobs, events int) {
		t.Helper()
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT (SELECT count(*) FROM instances),
			(SELECT count(*) FROM node_commands WHERE kind NOT IN ('assign', 'unassign')),
			(SELECT count(*) FROM outbox WHERE type LIKE 'instance.%' OR type LIKE 'node_command.%')`).Scan(
			&instances, &jobs, &events))
		return
	}

	_, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID, IdempotencyKey: "i1"})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "err: %v", err)
	require.ErrorContains(t, err, fmt.Sprintf("reservation %s is booked, starting at 2030-01-01T01:00:00Z; "+
		"instances run only while it is active", rsv.ID))
	exec := commands.RunNodeCommand{NodeID: "n1", AllocationID: alloc, IdempotencyKey: "c1", Kind: core.NodeCommandExec,
		Payload: core.NodeCommandPayload{Script: "nvidia-smi"}}
	_, err = f.h.RunNodeCommand(f.ctx, tenantA, exec)
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "err: %v", err)
	require.ErrorContains(t, err, fmt.Sprintf("reservation %s is booked, starting at 2030-01-01T01:00:00Z; "+
		"node jobs in allocation %s run only while it is active", rsv.ID, alloc))
	i, j, e := written()
	require.Zero(t, i+j+e, "nothing written: %d instances, %d jobs, %d events", i, j, e)

	// The database refuses it on its own: the guarded insert writes no row.
	_, err = f.d.Q.InstanceInsert(f.ctx, db.InstanceInsertParams{ID: "ins_direct", TenantID: "acme",
		ReservationID: rsv.ID, AllocationID: alloc, NodeID: "n1", Spec: []byte(`{}`)})
	require.ErrorIs(t, err, pgx.ErrNoRows)

	// Its window begins, but until it is activated it is still booked.
	f.d.AdvanceSimClock(t, start.Sub(f.d.Now(t)))
	_, err = f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID, IdempotencyKey: "i2"})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "err: %v", err)

	f.activate(t, rsv)
	_, err = f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID, IdempotencyKey: "i1"})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "a decided refusal is what its key replays")
	created, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID, IdempotencyKey: "i3"})
	require.NoError(t, err)
	require.Equal(t, core.ProvisionRequested, created.Instance.State)
	exec.IdempotencyKey = "c2"
	job, err := f.h.RunNodeCommand(f.ctx, tenantA, exec)
	require.NoError(t, err)
	require.Equal(t, core.CommandQueued, job.Command.State)

	// Its end passes; until the expiry runs it is still active, but
	// nothing runs on it any more. The refusal says why, rather than
	// "is active; ... only while it is active".
	f.d.AdvanceSimClock(t, end.Sub(f.d.Now(t)))
	_, err = f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID, IdempotencyKey: "i4"})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "err: %v", err)
	require.ErrorContains(t, err, fmt.Sprintf("reservation %s has reached its end and is expiring; "+
		"instances run only inside its window", rsv.ID))
	exec.IdempotencyKey = "c3"
	_, err = f.h.RunNodeCommand(f.ctx, tenantA, exec)
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "err: %v", err)
	require.ErrorContains(t, err, "has reached its end and is expiring")
	f.requireInvariants(t)
}
