package pg

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// RoundTrips counts what one piece of work asked of PostgreSQL: the
// statements it ran and the round trips they took. A statement sent on its
// own (Query, QueryRow, Exec, including BEGIN, COMMIT and the savepoint
// statements of a nested transaction) is one statement and one round trip;
// a pgx.Batch is one round trip however many statements it carries (pgx
// sends a batch as one pipeline). The first use of a statement on a
// connection costs pgx one more round trip to prepare it; that is counted
// apart (Prepares), because a warm pool never pays it.
//
// Attach it to a context with WithRoundTrips and run the work under that
// context on a pool whose Tracer is RoundTripTracer; counts add up across
// goroutines.
type RoundTrips struct {
	Statements atomic.Int64
	RoundTrips atomic.Int64
	Prepares   atomic.Int64
}

type roundTripsKey struct{}

// WithRoundTrips returns ctx carrying c: statements run under the returned
// context on a traced pool are counted in c.
func WithRoundTrips(ctx context.Context, c *RoundTrips) context.Context {
	return context.WithValue(ctx, roundTripsKey{}, c)
}

func roundTripsOf(ctx context.Context) *RoundTrips {
	c, _ := ctx.Value(roundTripsKey{}).(*RoundTrips)
	return c
}

// RoundTripTracer is the pgx tracer that fills the RoundTrips found in a
// statement's context. Wrap another tracer in Next to keep it.
type RoundTripTracer struct {
	Next pgx.QueryTracer
}

var (
	_ pgx.QueryTracer    = RoundTripTracer{}
	_ pgx.BatchTracer    = RoundTripTracer{}
	_ pgx.CopyFromTracer = RoundTripTracer{}
	_ pgx.PrepareTracer  = RoundTripTracer{}
)

// TraceQueryStart counts one statement and one round trip.
func (t RoundTripTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if c := roundTripsOf(ctx); c != nil {
		c.Statements.Add(1)
		c.RoundTrips.Add(1)
	}
	if t.Next != nil {
		return t.Next.TraceQueryStart(ctx, conn, data)
	}
	return ctx
}

// TraceQueryEnd passes the end on to Next.
func (t RoundTripTracer) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	if t.Next != nil {
		t.Next.TraceQueryEnd(ctx, conn, data)
	}
}

// TraceBatchStart counts one round trip for the whole batch, and passes
// it on to Next when Next traces batches too.
func (t RoundTripTracer) TraceBatchStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	if c := roundTripsOf(ctx); c != nil {
		c.RoundTrips.Add(1)
	}
	if next, ok := t.Next.(pgx.BatchTracer); ok {
		return next.TraceBatchStart(ctx, conn, data)
	}
	return ctx
}

// TraceBatchQuery counts each statement of a batch.
func (t RoundTripTracer) TraceBatchQuery(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	if c := roundTripsOf(ctx); c != nil {
		c.Statements.Add(1)
	}
	if next, ok := t.Next.(pgx.BatchTracer); ok {
		next.TraceBatchQuery(ctx, conn, data)
	}
}

// TraceBatchEnd passes the end on to Next when Next traces batches.
func (t RoundTripTracer) TraceBatchEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchEndData) {
	if next, ok := t.Next.(pgx.BatchTracer); ok {
		next.TraceBatchEnd(ctx, conn, data)
	}
}

// TraceCopyFromStart counts a COPY as one statement and one round trip.
func (t RoundTripTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	if c := roundTripsOf(ctx); c != nil {
		c.Statements.Add(1)
		c.RoundTrips.Add(1)
	}
	return ctx
}

// TraceCopyFromEnd does nothing.
func (t RoundTripTracer) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// TracePrepareStart counts a prepare (a cold statement cache).
func (t RoundTripTracer) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	if c := roundTripsOf(ctx); c != nil {
		c.Prepares.Add(1)
	}
	return ctx
}

// TracePrepareEnd does nothing.
func (t RoundTripTracer) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}
