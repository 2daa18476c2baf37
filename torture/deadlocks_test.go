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
