package outbox_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// waitFor bounds every wait on the database: other test packages share the
// server, and any transaction they hold open holds back the outbox frontier
// for everyone (it is cluster-wide), so visibility is polled, not assumed.
const waitFor = 20 * time.Second

// newEvent makes a test event whose subject says which it is.
func newEvent(t testing.TB, subject string) core.Event {
	t.Helper()
	e, err := core.NewEvent("test.happened", "t1", subject, map[string]string{"subject": subject})
	require.NoError(t, err)
	return e
}

// appendEach appends n events, each in its own committed transaction (so
// each has its own txid), and returns their ids in append order.
func appendEach(t testing.TB, d *pgtest.DB, prefix string, n int) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	ids := make([]uuid.UUID, n)
	for i := range n {
		e := newEvent(t, fmt.Sprintf("%s-%d", prefix, i))
		ids[i] = e.ID
		require.NoError(t, pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
			_, err := outbox.Append(ctx, db.New(tx), e)
			return err
		}))
	}
	return ids
}

// waitVisible polls until the reader sees at least n events from the start
// of the log. Once visible, rows stay visible: the frontier only advances.
func waitVisible(t testing.TB, d *pgtest.DB, n int) []outbox.Stored {
	t.Helper()
	var got []outbox.Stored
	require.Eventually(t, func() bool {
		var err error
		got, err = outbox.ReadAfter(context.Background(), d.Q, outbox.Position{}, n+1000)
		return err == nil && len(got) >= n
	}, waitFor, 5*time.Millisecond)
	return got
}

func idsOf(events []outbox.Stored) []uuid.UUID {
	out := make([]uuid.UUID, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}

// recorder collects what sinks received, across dispatchers.
type recorder struct {
	mu  sync.Mutex
	got []outbox.Stored
}

func (r *recorder) add(events ...outbox.Stored) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, events...)
}

func (r *recorder) all() []outbox.Stored {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]outbox.Stored(nil), r.got...)
}

// distinct returns the ids in first-delivery order, deduplicated by event
// id as every consumer does.
func (r *recorder) distinct() []uuid.UUID {
	seen := map[uuid.UUID]bool{}
	var out []uuid.UUID
	for _, e := range r.all() {
		if !seen[e.ID] {
			seen[e.ID] = true
			out = append(out, e.ID)
		}
	}
	return out
}

// funcSink is a Sink whose Deliver is a function of the test.
type funcSink struct {
	id      string
	deliver func(ctx context.Context, events []outbox.Stored) error
}

func (s funcSink) ID() string { return s.id }
func (s funcSink) Deliver(ctx context.Context, events []outbox.Stored) error {
	return s.deliver(ctx, events)
}

// recordingSink delivers into r.
func recordingSink(id string, r *recorder) funcSink {
	return funcSink{id: id, deliver: func(_ context.Context, events []outbox.Stored) error {
		r.add(events...)
		return nil
	}}
}
