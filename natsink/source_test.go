package natsink_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/natsink"
	"github.com/bettercompute/compute/outbox"
)

// openSource opens a stream source on url that keeps recent events in
// memory, closed when the test ends.
func openSource(t *testing.T, url string, recent int) *natsink.Source {
	t.Helper()
	src, err := natsink.OpenSource(natsink.SourceConfig{
		URL: url, Name: "source-test", ReconnectWait: 20 * time.Millisecond, RequestTimeout: 2 * time.Second,
		LongPoll: 200 * time.Millisecond, Recent: recent,
	}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(src.Close)
	return src
}

// pager is what the outbox reader and the JetStream source have in common
// for a stream's catch-up.
type pager interface {
	Page(ctx context.Context, scope eventstream.Scope, after outbox.Position, limit int) (eventstream.Page, error)
}

// pagesOf reads every page of scope after `after` from src.
func pagesOf(t *testing.T, src pager, scope eventstream.Scope, after outbox.Position, limit int) []outbox.Stored {
	t.Helper()
	var out []outbox.Stored
	for range 10_000 {
		p, err := src.Page(context.Background(), scope, after, limit)
		require.NoError(t, err)
		out = append(out, p.Events...)
		if len(p.Events) < limit {
			return out
		}
		after = p.Next
	}
	t.Fatal("pages never ended")
	return nil
}

// envelopes is each event as SSE and webhooks send it.
func envelopes(t *testing.T, events []outbox.Stored) []string {
	t.Helper()
	out := make([]string, len(events))
	for i, e := range events {
		b, err := json.Marshal(e.Event)
		require.NoError(t, err)
		out[i] = e.Position.String() + " " + string(b)
	}
	return out
}

// The JetStream source reads the log the sink forwarded as the outbox
// reader reads the outbox: the same head, the same live feed, the same
// pages for every scope (tenants with characters a subject cannot hold,
// fleet events only for operators, type filters), from memory or from the
// stream, and the same CURSOR_EXPIRED for a cursor older than what is
// kept.
func TestSourceReadsTheLogAsTheOutboxDoes(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	d := pgtest.New(t)
	startProcess(t, d, "p1", fastConfig(srv.URL))
	require.NoError(t, <-appendLoad(d, "a", 3, 15))
	// appendLoad's tenants are those of k, the event's index in its
	// transaction: add the tenants it leaves out.
	var more []core.Event
	for i, tenant := range []string{"fleet", "a b*>", "fleet", ""} {
		e, err := core.NewEvent(loadTypes[i], tenant, fmt.Sprintf("more-%d", i), map[string]int{"i": i})
		require.NoError(t, err)
		more = append(more, e)
	}
	require.NoError(t, pgx.BeginFunc(context.Background(), d.Pool, func(tx pgx.Tx) error {
		_, err := outbox.Append(context.Background(), db.New(tx), more...)
		return err
	}))
	require.NoError(t, <-appendLoad(d, "b", 2, 5))
	log := waitDelivered(t, d, countEvents(3, 15)+len(more)+countEvents(2, 5))
	ctx := context.Background()
	pgSrc := eventstream.NewReader(d.Pool)

	// Recent 7: the head reads the newest 7 into memory; older cursors
	// are found in the stream.
	src := openSource(t, srv.URL, 7)
	head, err := src.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, log[len(log)-1].Position, head)

	// The live feed, from the start and from any event.
	for _, from := range []int{-1, 0, 5, len(log) - 8, len(log) - 2, len(log) - 1} {
		var after outbox.Position
		if from >= 0 {
			after = log[from].Position
		}
		var got []outbox.Stored
		for cur := after; ; {
			batch, err := src.ReadAfter(ctx, cur, 10)
			require.NoError(t, err)
			if len(batch) == 0 {
				break
			}
			got = append(got, batch...)
			cur = batch[len(batch)-1].Position
		}
		require.Equal(t, envelopes(t, log[from+1:]), envelopes(t, got), "live feed after event %d", from)
	}

	scopes := []eventstream.Scope{
		{AllTenants: true},
		{AllTenants: true, Types: []string{"node.lost"}},
		{AllTenants: true, Types: []string{"node.lost", "gpu.mode_changed"}},
		{Tenant: "acme"},
		{Tenant: "beta.corp"},
		{Tenant: "a b*>"},
		{Tenant: "fleet"},
		{Tenant: "acme", Types: []string{"reservation.booked"}},
		{Tenant: "acme", Types: []string{"reservation.booked", "reservation.released"}},
		{Tenant: "nobody"},
	}
	// A new source whose memory holds the newest 7 events, after a live
	// read: pages before them come from the stream, the rest from memory.
	src = openSource(t, srv.URL, 7)
	_, err = src.Head(ctx)
	require.NoError(t, err)
	for _, scope := range scopes {
		for _, from := range []int{-1, 3, len(log) - 10, len(log) - 5, len(log) - 1} {
			var after outbox.Position
			if from >= 0 {
				after = log[from].Position
			}
			for _, limit := range []int{1, 3, 100} {
				want := pagesOf(t, pgSrc, scope, after, limit)
				got := pagesOf(t, src, scope, after, limit)
				require.Equal(t, envelopes(t, want), envelopes(t, got), "scope %+v after event %d, pages of %d", scope, from, limit)
				if scope.Tenant == "nobody" {
					require.Empty(t, got)
				}
			}
		}
	}
	fleet := pagesOf(t, src, eventstream.Scope{Tenant: "fleet"}, outbox.Position{}, 100)
	require.NotEmpty(t, fleet, "the tenant named fleet has events")
	for _, e := range fleet {
		require.Equal(t, "fleet", e.TenantID, "a tenant named fleet never sees fleet-wide events")
	}

	// Expiry: a cursor below the stream's first message is CURSOR_EXPIRED,
	// as one below the outbox's oldest event is; one at a kept message is
	// not. Purge the stream's first 10 messages.
	nc, err := nats.Connect(srv.URL)
	require.NoError(t, err)
	defer nc.Close()
	js, err := nc.JetStream()
	require.NoError(t, err)
	require.NoError(t, js.PurgeStream(natsink.DefaultStream, &nats.StreamPurgeRequest{Sequence: 11}))
	old := openSource(t, srv.URL, 2) // its memory holds only the newest two
	_, err = old.Head(ctx)
	require.NoError(t, err)
	for _, c := range []outbox.Position{{TxID: 1, Seq: 1}, log[0].Position, log[9].Position} {
		require.Equal(t, core.CodeCursorExpired, core.CodeOf(old.CheckCursor(ctx, c)), "cursor %s", c)
		_, err := old.Page(ctx, eventstream.Scope{AllTenants: true}, c, 10)
		require.Equal(t, core.CodeCursorExpired, core.CodeOf(err), "page after %s", c)
	}
	require.NoError(t, old.CheckCursor(ctx, log[10].Position), "the first kept message's own cursor")
	got := pagesOf(t, old, eventstream.Scope{AllTenants: true}, log[10].Position, 4)
	require.Equal(t, envelopes(t, log[11:]), envelopes(t, got))
	require.NoError(t, old.CheckCursor(ctx, outbox.Position{}), "no cursor never expires")
}

// A source whose server cannot be reached (a wrong COMPUTE_NATS_URL, NATS
// down) says so in its errors, which /readyz and the log show, rather than
// only nats.go's "outbound buffer limit exceeded" of a request made while
// disconnected.
func TestSourceSaysWhenItIsNotConnected(t *testing.T) {
	t.Parallel()
	src := openSource(t, "nats://127.0.0.1:1", 4)
	_, err := src.Head(context.Background())
	require.Equal(t, core.CodeUnavailable, core.CodeOf(err))
	require.ErrorContains(t, err, "not connected to NATS")
}
