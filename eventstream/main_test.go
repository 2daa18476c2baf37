package eventstream_test

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
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// waitFor bounds every wait on visibility: the outbox frontier is
// cluster-wide, so other tests' transactions on the same server may hold
// it back for a moment. Visibility is polled, never assumed.
const waitFor = 20 * time.Second

var operator = eventstream.Scope{AllTenants: true}

// appendOne appends one event in its own committed transaction.
func appendOne(t testing.TB, d *pgtest.DB, tenant, typ, subject string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	e, err := core.NewEvent(typ, tenant, subject, map[string]string{"subject": subject})
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		_, err := outbox.Append(ctx, db.New(tx), e)
		return err
	}))
	return e.ID
}

// appendN appends n events of tenant and type, one transaction each.
func appendN(t testing.TB, d *pgtest.DB, tenant, typ string, n int) []uuid.UUID {
	t.Helper()
	ids := make([]uuid.UUID, n)
	for i := range n {
		ids[i] = appendOne(t, d, tenant, typ, fmt.Sprintf("%s-%s-%d", tenant, typ, i))
	}
	return ids
}

// waitVisible waits until the whole log (every tenant) has n visible
// events and returns them.
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

// collector runs a stream's Deliver in the background and records what
// it sends.
type collector struct {
	mu     sync.Mutex
	got    []outbox.Stored
	idle   int
	resume outbox.Position // the last idle call's
	done   chan error      // Deliver's result
}

func deliver(ctx context.Context, s *eventstream.Stream, idleEvery time.Duration) *collector {
	c := &collector{done: make(chan error, 1)}
	go func() {
		c.done <- s.Deliver(ctx, func(e outbox.Stored) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.got = append(c.got, e)
			return nil
		}, idleEvery, func(resume outbox.Position) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.idle++
			c.resume = resume
			return nil
		})
	}()
	return c
}

func (c *collector) events() []outbox.Stored {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]outbox.Stored(nil), c.got...)
}

func (c *collector) idles() (int, outbox.Position) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.idle, c.resume
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// pollUntil steps the broker until cond holds: no sleeping, and robust to
// the frontier being held back by other tests.
func pollUntil(t *testing.T, b *eventstream.Broker, cond func() bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		if _, err := b.Poll(context.Background()); err != nil {
			t.Errorf("poll: %v", err) // Eventually runs this off the test goroutine
			return false
		}
		return cond()
	}, waitFor, 2*time.Millisecond)
}
