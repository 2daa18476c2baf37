package commands_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// TestWritePathSettlesOnGenericPlans holds every statement of a create and
// a release to one plan per connection. PostgreSQL plans a prepared
// statement afresh for its first five runs, then keeps its generic plan
// unless that looks dearer than the custom ones: a statement whose
// arguments make custom plans look cheaper (a NULL that folds a condition
// away, a known array length or timestamp) is then planned at every run,
// which cost more CPU than running it (DeviceLockForBooking, DeviceFreeAtoms).
// pg_prepared_statements counts both kinds per statement of the session.
func TestWritePathSettlesOnGenericPlans(t *testing.T) {
	d := pgtest.New(t)
	pool := preparedPool(t, d.URL, 1, nil)
	h := commands.New(pool, commands.Config{})
	commandstest.Seed(t, d, h, 2)
	// A fleet whose statistics tell nodes, devices and windows apart: on
	// a handful of rows every plan costs the same.
	for i := range 300 {
		commandstest.Node(t, h, fmt.Sprintf("n%03d", i), exclusive, exclusive, exclusive, exclusive)
	}
	_, err := pool.Exec(context.Background(), "ANALYZE")
	require.NoError(t, err)
	const runs = 20
	for i := range runs {
		start, end := window(1+i%3, 4+i%5)
		cmd := commands.CreateReservation{PoolID: commandstest.Pool, GPUs: 1 + i%2, Start: start, End: end}
		if i%2 == 0 {
			cmd.VCPU, cmd.MemoryMB = 4, 1024
		}
		if i%3 == 0 {
			cmd.GPUModel = "a100"
		}
		res, err := h.CreateReservation(context.Background(), tenantA, cmd)
		require.NoError(t, err)
		_, err = h.ReleaseReservation(context.Background(), tenantA, commands.ReleaseReservation{ReservationID: res.Reservation.ID})
		require.NoError(t, err)
	}
	type plans struct {
		Name            string
		Generic, Custom int64
	}
	rows, err := pool.Query(context.Background(),
		`SELECT coalesce(substring(statement from '-- name: (\w+)'), statement), generic_plans, custom_plans
		   FROM pg_prepared_statements WHERE generic_plans + custom_plans >= $1`, runs)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[plans])
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(got), 10, "the write path's statements ran on the one connection")
	for _, p := range got {
		require.LessOrEqual(t, p.Custom, int64(5), "%s: planned for its arguments at %d of %d runs", p.Name, p.Custom, p.Generic+p.Custom)
	}
}
