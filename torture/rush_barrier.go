package torture

import (
	"context"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// rushBarrier holds every placer of one rush after its first read of the
// placement candidates until all of them have read theirs. Started at one
// gate, the placers still ran one after another whenever the machine was
// busy (each read the nodes the ones before it had already taken, and went
// pending without a race): a run of 10,000 operations beside other work
// reached the replan cap 0 times in 20 rushes. Held, they all decide on the
// same free nodes, and the ones that lose a node to another placer replan
// against nodes taken meanwhile until they reach the cap, on any machine.
type rushBarrier struct {
	mu      sync.Mutex
	pending int
	all     chan struct{}
}

func newRushBarrier(placers int) *rushBarrier {
	return &rushBarrier{pending: placers, all: make(chan struct{})}
}

// rushPlacer is one placer's pass through its rush's barrier.
type rushPlacer struct {
	b    *rushBarrier
	once sync.Once
}

type rushPlacerKey struct{}

// placer returns ctx carrying a new placer of b, for its create's
// statements, and the placer, whose arrive the caller defers: a create that
// ends before it reads any candidates (a refusal) must not hold the others.
func (b *rushBarrier) placer(ctx context.Context) (context.Context, *rushPlacer) {
	p := &rushPlacer{b: b}
	return context.WithValue(ctx, rushPlacerKey{}, p), p
}

// arrive counts the placer in, once.
func (p *rushPlacer) arrive() {
	p.once.Do(func() {
		p.b.mu.Lock()
		defer p.b.mu.Unlock()
		if p.b.pending--; p.b.pending == 0 {
			close(p.b.all)
		}
	})
}

// hold counts the placer in and waits for the others; once all arrived it
// returns at once, so replans pass freely.
func (p *rushPlacer) hold(ctx context.Context) {
	p.arrive()
	select {
	case <-p.b.all:
	case <-ctx.Done():
	}
}

// candidatesPrefix starts the text of the placement candidates query.
const candidatesPrefix = "-- name: NodePlacementCandidates "

// rushTracer holds a rush placer's statements after the candidates read
// (see rushBarrier); statements of any other context pass untouched.
type rushTracer struct{}

type rushSQLKey struct{}

func (rushTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, rushSQLKey{}, d.SQL)
}

func (rushTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(rushSQLKey{}).(string)
	holdAfter(ctx, sql, d.Err)
}

func (rushTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (rushTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	holdAfter(ctx, d.SQL, d.Err)
}

func (rushTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// holdAfter holds a rush placer after a successful candidates read.
func holdAfter(ctx context.Context, sql string, err error) {
	p, ok := ctx.Value(rushPlacerKey{}).(*rushPlacer)
	if ok && err == nil && strings.HasPrefix(sql, candidatesPrefix) {
		p.hold(ctx)
	}
}
