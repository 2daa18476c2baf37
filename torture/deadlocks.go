package torture

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bettercompute/compute/internal/pg"
)

// deadlockTracer counts the statements PostgreSQL aborted as deadlocked, by
// the torture operation that ran them. The transaction helper retries a
// deadlocked transaction and the placer rolls back to its savepoint, so a
// deadlock never reaches the caller: only a tracer on the pool sees it.
type deadlockTracer struct {
	mu    sync.Mutex
	count map[string]int
	// samples keeps PostgreSQL's account of the first few deadlocks (which
	// processes waited for which locks, in which statements), to fix them.
	samples []string
	// txs are the statements (first lines) of each server process's
	// current transaction, by backend pid: PostgreSQL tells the client
	// which processes deadlocked but not what they ran (that goes to the
	// server log only), so the tracer keeps it to name both sides.
	txs map[uint32][]string
	// preemption counts the deadlocks a preempting transaction took part
	// in, whichever side PostgreSQL aborted: preemption runs in creates,
	// retries and the background's retries alike.
	preemption int
}

// maxTxStatements bounds the statements kept per transaction (the last).
const maxTxStatements = 40

// preemptionStatements are the statements only a preempting transaction
// runs (sql/queries/preemption.sql): one among a transaction's statements
// makes it one.
var preemptionStatements = []string{"QuotaUsageLockTenants", "DeviceLockNodeForPreemption", "ReservationPreemptionRecord"}

// maxSamples bounds the deadlock accounts kept.
const maxSamples = 5

func newDeadlockTracer() *deadlockTracer {
	return &deadlockTracer{count: map[string]int{}, txs: map[uint32][]string{}}
}

// opKey carries the torture operation's kind in the context of its calls.
type opKey struct{}

// withOp names the operation whose statements run under ctx.
func withOp(ctx context.Context, kind string) context.Context {
	return context.WithValue(ctx, opKey{}, kind)
}

// sqlKey carries a statement's text from its start to its end.
type sqlKey struct{}

func (t *deadlockTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	t.note(conn.PgConn().PID(), data.SQL)
	return context.WithValue(ctx, sqlKey{}, data.SQL)
}

func (t *deadlockTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	t.record(ctx, sqlOf(ctx), data.Err)
}

// The batch side: the write path sends most of a command's statements in
// batches, and a deadlock there is reported on the statement that hit it.

func (t *deadlockTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (t *deadlockTracer) TraceBatchQuery(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	t.note(conn.PgConn().PID(), data.SQL)
	t.record(ctx, data.SQL, data.Err)
}

// note adds a statement to the transaction of server process pid; a BEGIN
// starts the list afresh.
func (t *deadlockTracer) note(pid uint32, sql string) {
	line := firstLine(strings.TrimSpace(sql))
	t.mu.Lock()
	defer t.mu.Unlock()
	if strings.HasPrefix(strings.ToLower(line), "begin") {
		t.txs[pid] = t.txs[pid][:0]
	}
	l := append(t.txs[pid], line)
	if len(l) > maxTxStatements {
		l = slices.Delete(l, 0, len(l)-maxTxStatements)
	}
	t.txs[pid] = l
}

// processPIDs are the backend pids a deadlock's detail names.
var processPIDs = regexp.MustCompile(`[Pp]rocess (\d+)`)

func (t *deadlockTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// record counts err when it is a deadlock, under the operation of ctx.
func (t *deadlockTracer) record(ctx context.Context, sql string, err error) {
	var pgErr *pgconn.PgError
	if !pg.IsDeadlock(err) || !errors.As(err, &pgErr) { // pgErr for its Detail
		return
	}
	kind, _ := ctx.Value(opKey{}).(string)
	if kind == "" {
		kind = "other"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.count[kind]++
	var sides []string
	preempting := false
	seen := map[uint32]bool{}
	for _, m := range processPIDs.FindAllStringSubmatch(pgErr.Detail, -1) {
		n, err := strconv.ParseUint(m[1], 10, 32)
		if err != nil || seen[uint32(n)] {
			continue
		}
		pid := uint32(n)
		seen[pid] = true
		stmts := t.txs[pid]
		for _, st := range stmts {
			preempting = preempting || slices.ContainsFunc(preemptionStatements, func(name string) bool {
				return strings.Contains(st, "name: "+name+" ")
			})
		}
		if len(stmts) > 0 {
			sides = append(sides, fmt.Sprintf("process %d's transaction: %s", pid, strings.Join(stmts, " | ")))
		}
	}
	if preempting {
		t.preemption++
	}
	if len(t.samples) < maxSamples {
		sample := kind + ": " + firstLine(sql) + "\n" + pgErr.Detail
		if len(sides) > 0 {
			sample += "\n" + strings.Join(sides, "\n")
		}
		t.samples = append(t.samples, sample)
	}
}

// preemptions is how many deadlocks involved a preempting transaction.
func (t *deadlockTracer) preemptions() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.preemption
}

// snapshot copies the counts.
func (t *deadlockTracer) snapshot() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.count))
	for k, v := range t.count {
		out[k] = v
	}
	return out
}

// firstLine is a statement's first line: sqlc puts the query's name there.
func firstLine(sql string) string {
	if i := strings.IndexByte(sql, '\n'); i >= 0 {
		return sql[:i]
	}
	return sql
}

func sqlOf(ctx context.Context) string { s, _ := ctx.Value(sqlKey{}).(string); return s }
