package outbox

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// NotifyWindow is the shortest time between two notifications one
// Notifier sends. A NOTIFY is a transaction of its own that takes
// PostgreSQL's database-wide notification lock and holds it until its
// commit record is flushed, so notifying once per appending commit would
// serialise the database's commits again (group commit lost: 8 unpaced
// writers appended at 0.56x the rate they reached without notifying). One
// per 5 ms is at most 200 a second per process whatever the append rate,
// and adds at most 5 ms to the delay of a poke in another process (this
// process's own readers are poked at once), which readers would otherwise
// wait a whole poll interval for. Appends with notification ÷ without:
// 0.94–0.97 at 2 ms, 0.96–0.98 at 5 ms (two runs each, 8 writers).
const NotifyWindow = 5 * time.Millisecond

// notifyTimeout bounds one NOTIFY; a hint that takes longer is not worth
// more waiting (readers poll).
const notifyTimeout = 5 * time.Second

// appendStatements are the generated queries whose committed runs are
// announced: every append, from Append, AppendIn, AppendAllIn or the
// queries themselves.
var appendStatements = []string{"OutboxAppend", "OutboxAppendMany"}

// The hook is registered when the package is linked in, so that every pool
// opened by pg.Connect in a process that can append announces its appends,
// as the trigger of migration 0010 did for every writer, with no step for a
// process (or a test) to forget. InstallNotifier only adds this process's
// own subscribers and logger.
func init() {
	for _, s := range appendStatements {
		pg.AfterCommit(s, func(p *pgxpool.Pool) { notifierOf(p).committed() })
	}
}

// Notifier announces the commits of appending transactions on one pool:
// it pokes the subscribers of this process's listeners at once, in
// process, and sends `SELECT pg_notify('outbox', ”)` on a pool connection
// outside any transaction (other processes, and this one's Listener, hear
// it), coalesced: one notification in flight at a time and at most one
// per NotifyWindow. A commit that comes while one is in flight or within
// the window is announced by exactly one more notification after it, so
// the last commit is always followed by one. It never lengthens the
// appending transaction: the commit has returned before it runs, and it
// sends from a goroutine of its own.
//
// A notification is a hint: one that fails is logged at debug level and
// dropped, and readers find the events at their next poll.
type Notifier struct {
	pool *pgxpool.Pool

	mu        sync.Mutex
	logger    *slog.Logger
	listeners []*Listener
	running   bool          // a sender goroutine is sending or keeping the window
	pending   bool          // a commit came since the sender's last notification began
	idle      chan struct{} // closed when the running sender stops
	notify    func()        // sends one notification (replaced in tests)
}

// notifiers holds the notifier of every pool that has committed an append
// (or been given to InstallNotifier), for the life of the process: a
// service has one or two pools, a test binary one per test database.
var notifiers sync.Map // *pgxpool.Pool → *Notifier

// notifierOf returns the pool's notifier, made on first use.
func notifierOf(pool *pgxpool.Pool) *Notifier {
	if n, ok := notifiers.Load(pool); ok {
		return n.(*Notifier)
	}
	n, _ := notifiers.LoadOrStore(pool, newNotifier(pool))
	return n.(*Notifier)
}

func newNotifier(pool *pgxpool.Pool) *Notifier {
	n := &Notifier{pool: pool, logger: slog.Default()}
	n.notify = n.send1
	return n
}

// InstallNotifier returns the notifier of pool (a pool opened by
// pg.Connect), logging to logger when it is not nil, and has it poke the
// subscribers of l (when not nil) right after each appending commit on
// pool, without waiting for the notification to come back through the
// database. Every process that appends has a notifier whether or not it
// calls this; a process with a Listener calls it for each of its pools.
func InstallNotifier(pool *pgxpool.Pool, l *Listener, logger *slog.Logger) *Notifier {
	n := notifierOf(pool)
	n.mu.Lock()
	defer n.mu.Unlock()
	if logger != nil {
		n.logger = logger
	}
	if l != nil {
		for _, have := range n.listeners {
			if have == l {
				return n
			}
		}
		n.listeners = append(n.listeners, l)
	}
	return n
}

// committed is the after-commit hook: poke at once, notify soon.
func (n *Notifier) committed() {
	n.mu.Lock()
	listeners := n.listeners
	start := !n.running
	if start {
		n.running = true
		n.idle = make(chan struct{})
	} else {
		n.pending = true
	}
	n.mu.Unlock()
	for _, l := range listeners {
		l.poke()
	}
	if start {
		go n.send()
	}
}

// Wait returns once no notification is pending or being sent (or when ctx
// ends, with its error): every commit announced before Wait was called
// has then had its notification sent. For shutdown and tests.
func (n *Notifier) Wait(ctx context.Context) error {
	n.mu.Lock()
	idle := n.idle
	running := n.running
	n.mu.Unlock()
	if !running {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// send notifies, then keeps the window: if commits came meanwhile it
// notifies once more after the window, and so on until a window passes
// without one.
func (n *Notifier) send() {
	for {
		began := time.Now()
		n.notify()
		if rest := NotifyWindow - time.Since(began); rest > 0 {
			time.Sleep(rest) // coalescing window, not a wait for an outcome
		}
		n.mu.Lock()
		if !n.pending {
			n.running = false
			close(n.idle)
			n.mu.Unlock()
			return
		}
		n.pending = false
		n.mu.Unlock()
	}
}

// send1 sends one notification.
func (n *Notifier) send1() {
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	err := db.New(n.pool).OutboxNotify(ctx)
	if err != nil {
		n.mu.Lock()
		logger := n.logger
		n.mu.Unlock()
		logger.Debug("outbox notification not sent; readers find the events at their next poll", "err", err)
	}
}
