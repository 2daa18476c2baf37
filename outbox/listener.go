package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/tracing"
	"github.com/jackc/pgx/v5"
)

// NotifyChannel is the channel on which appends to the outbox are announced
// (by Notifier, after the appending transactions commit).
const NotifyChannel = "outbox"

// Listener wakes dispatchers early when events are appended. It LISTENs on
// a dedicated connection opened from its own URL, because LISTEN needs a
// session and does not work through PgBouncer's transaction pooling: point
// that URL at PostgreSQL directly. Pokes are hints only: dispatchers poll as
// well, so a poke lost while the listener reconnects (or no listener at all)
// only delays delivery by one poll interval. Appends committed by this
// process poke its subscribers at once, in process, when the pool they
// were made on was given to InstallNotifier with this listener.
type Listener struct {
	url    string
	logger *slog.Logger

	mu   sync.Mutex
	subs []chan struct{}

	// Backoff is how long Run waits before reconnecting after an error.
	Backoff time.Duration
}

// NewListener returns a listener for the database at url (a direct
// connection, not through PgBouncer).
func NewListener(url string, logger *slog.Logger) *Listener {
	if logger == nil {
		logger = slog.Default()
	}
	return &Listener{url: url, logger: logger, Backoff: time.Second}
}

// Subscribe returns a channel that receives a poke after appends commit.
// It is buffered with room for one poke and the listener never blocks on
// it: pokes arriving while one is pending fold into it, which is all a
// dispatcher needs ("read again"). Pass it to Dispatcher.Run.
func (l *Listener) Subscribe() <-chan struct{} {
	ch := make(chan struct{}, 1)
	l.mu.Lock()
	l.subs = append(l.subs, ch)
	l.mu.Unlock()
	return ch
}

// poke wakes every subscriber without blocking.
func (l *Listener) poke() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ch := range l.subs {
		select {
		case ch <- struct{}{}:
		default: // a poke is already pending
		}
	}
}

// Run listens until ctx ends, reconnecting after Backoff when the
// connection fails. A run of failed connections is logged once as it
// starts, once a minute and once when LISTEN works again
// (tracing.FailureStreak), not at every attempt. After every (re)connect
// it pokes all subscribers once, since appends made while it was not
// listening were not announced.
func (l *Listener) Run(ctx context.Context) {
	down := tracing.NewFailureStreak(l.logger, "outbox listener disconnected", slog.LevelWarn)
	for {
		err := l.listen(ctx, func() { down.Succeeded() })
		if ctx.Err() != nil {
			return
		}
		down.Failed(err, "meanwhile", "dispatchers fall back to polling until it reconnects")
		select {
		case <-ctx.Done():
			return
		case <-time.After(l.Backoff):
		}
	}
}

// listen holds one connection: LISTEN, call listening, poke once, then poke
// on every notification until the connection or ctx ends.
func (l *Listener) listen(ctx context.Context, listening func()) error {
	conn, err := pgx.Connect(ctx, l.url)
	if err != nil {
		return fmt.Errorf("connect outbox listener: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := db.New(conn).OutboxListen(ctx); err != nil {
		return fmt.Errorf("listen on %s: %w", NotifyChannel, err)
	}
	listening()
	l.poke()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("wait for %s notification: %w", NotifyChannel, err)
		}
		l.poke()
	}
}
