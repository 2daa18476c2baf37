package torture

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// The tracer counts deadlocks, by operation, with their detail, and nothing
// else: a serialization failure is retried too but is not a deadlock.
func TestDeadlockTracerCountsOnlyDeadlocks(t *testing.T) {
	tr := newDeadlockTracer()
	ctx := context.WithValue(context.Background(), opKey{}, "extend")
	tr.record(ctx, "-- name: BookingInsert :exec\nINSERT …", fmt.Errorf("x: %w", &pgconn.PgError{Code: "40P01", Detail: "Process 1 waits"}))
	tr.record(ctx, "SELECT 1", &pgconn.PgError{Code: "40001"})
	tr.record(context.Background(), "SELECT 1", &pgconn.PgError{Code: "40P01"})
	require.Equal(t, map[string]int{"extend": 1, "other": 1}, tr.snapshot())
	require.Equal(t, "extend: -- name: BookingInsert :exec\nProcess 1 waits", tr.samples[0])
}

// A deadlock is a preempting transaction's when either side ran one of the
// statements only preemption runs, whichever side PostgreSQL aborted; the
// sample names what each side's transaction ran, from its BEGIN on.
func TestDeadlockTracerNamesPreemption(t *testing.T) {
	tr := newDeadlockTracer()
	ctx := context.WithValue(context.Background(), opKey{}, "release")
	tr.note(7, "-- name: Old :exec\n…")
	tr.note(7, "begin isolation level read committed")
	tr.note(7, "-- name: QuotaUsageLockTenants :many\nSELECT …")
	tr.note(7, "-- name: DeviceLockNodeForPreemption :many\nSELECT …")
	tr.note(8, "begin")
	tr.note(8, "-- name: QuotaUsageLockAndRefund :many\n…")
	detail := "Process 8 waits for ShareLock on transaction 1; blocked by process 7.\nProcess 7 waits for ShareLock on transaction 2; blocked by process 8."
	tr.record(ctx, "-- name: QuotaUsageLockAndRefund :many\n…", &pgconn.PgError{Code: "40P01", Detail: detail})
	require.Equal(t, 1, tr.preemptions(), "the release was aborted, the preemptor took part")
	require.Equal(t, map[string]int{"release": 1}, tr.snapshot())
	require.Contains(t, tr.samples[0], "process 8's transaction: begin | -- name: QuotaUsageLockAndRefund :many")
	require.Contains(t, tr.samples[0], "process 7's transaction: begin isolation level read committed | "+
		"-- name: QuotaUsageLockTenants :many | -- name: DeviceLockNodeForPreemption :many")

	tr.note(9, "begin")
	tr.note(9, "-- name: NodeCordon :exec")
	tr.record(ctx, "x", &pgconn.PgError{Code: "40P01", Detail: "Process 9 waits …; blocked by process 8."})
	require.Equal(t, 1, tr.preemptions(), "neither side preempts")
}
