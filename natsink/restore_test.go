package natsink_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/internal/metrics"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/natsink"
	"github.com/bettercompute/compute/outbox"
)

// restoreTo does to d's log what restoring the database to the moment the
// log ended at point does: the events after it are gone, and the sink's
// cursor is where the backup had it.
func restoreTo(t *testing.T, d *pgtest.DB, point outbox.Position) {
	t.Helper()
	ctx := context.Background()
	_, err := d.Pool.Exec(ctx, `DELETE FROM outbox WHERE (txid, seq) > ($1::xid8, $2::bigint)`, point.TxID, point.Seq)
	require.NoError(t, err)
	_, err = d.Pool.Exec(ctx, `UPDATE outbox_cursors SET txid = $2, seq = $3 WHERE sink = $1`,
		natsink.SinkID, point.TxID, point.Seq)
	require.NoError(t, err)
}

// appendAtTxid appends an event numbered with transaction id txid, as a
// point-in-time recovery numbers the restored database's new events with
// the transaction ids the lost ones had.
func appendAtTxid(t *testing.T, d *pgtest.DB, txid uint64, subject string) {
	t.Helper()
	_, err := d.Pool.Exec(context.Background(),
		`INSERT INTO outbox (id, txid, type, tenant_id, subject, data) VALUES ($1, $2::xid8, 'node.lost', 'acme', $3, '{}')`,
		uuid.New(), txid, subject)
	require.NoError(t, err)
}

// gauge is the value of the gauge name in reg, -1 when it is not there.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// streamIDs is the event id of every message of the stream, in order.
func streamIDs(t *testing.T, url string) []string {
	t.Helper()
	_, msgs := readStream(t, url)
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.header.Get(nats.MsgIdHdr)
	}
	return ids
}

func idsOf(events []outbox.Stored) []string {
	ids := make([]string, len(events))
	for i, e := range events {
		ids[i] = e.ID.String()
	}
	return ids
}

// restored is a stream and a log after a restore of the database to an
// earlier point: the stream holds kept (the events up to the restore
// point) and lost (those after it, which the restored log lost), and the
// log has since written three events at transaction ids the lost ones had
// (as a point-in-time recovery numbers them) and more above them. p2 is
// the dispatcher process started on the restored database.
type restored struct {
	srv        *testenv.NATS
	d          *pgtest.DB
	kept, lost []outbox.Stored
	news       int // events written after the restore
	p2         *process
}

func restoreScenario(t *testing.T) restored {
	t.Helper()
	r := restored{srv: testenv.StartNATS(t), d: pgtest.New(t)}
	cfg := fastConfig(r.srv.URL)
	p1 := startProcess(t, r.d, "p1", cfg)
	require.NoError(t, <-appendLoad(r.d, "kept", 2, 3))
	r.kept = waitDelivered(t, r.d, countEvents(2, 3))
	require.NoError(t, <-appendLoad(r.d, "lost", 2, 3))
	all := waitDelivered(t, r.d, 2*countEvents(2, 3))
	r.lost = all[len(r.kept):]
	require.Equal(t, idsOf(all), streamIDs(t, r.srv.URL))
	p1.stop()

	restoreTo(t, r.d, r.kept[len(r.kept)-1].Position)
	for i, e := range r.lost[:3] { // new events at transaction ids the lost ones had
		appendAtTxid(t, r.d, e.Position.TxID, "reused-"+string(rune('a'+i)))
	}
	require.NoError(t, <-appendLoad(r.d, "new", 1, 3)) // and above them
	r.news = 3 + countEvents(1, 3)
	r.p2 = startProcess(t, r.d, "p2", cfg)
	return r
}

// purge purges the stream, as the operator does after a restore.
func (r restored) purge(t *testing.T) {
	t.Helper()
	nc, err := nats.Connect(r.srv.URL)
	require.NoError(t, err)
	defer nc.Close()
	js, err := nc.JetStream()
	require.NoError(t, err)
	require.NoError(t, js.PurgeStream(natsink.DefaultStream))
}

// After the database is restored to an earlier point the stream still
// holds the events written after it, and the log's new events are
// numbered among them (a point-in-time recovery reuses their transaction
// ids) and above them. The forwarder must neither skip the first (it
// would take them as published) nor put the others after events that no
// longer happened: it refuses, says so in Health and the metric, moves no
// cursor, and goes on by itself once the stream is purged, with every
// event of the restored log after its cursor, once, in log order.
func TestForwarderRefusesAStreamAheadOfTheRestoredLog(t *testing.T) {
	t.Parallel()
	r := restoreScenario(t)
	require.Eventually(t, func() bool { return r.p2.sink.Health() != nil }, waitFor, 5*time.Millisecond,
		"the forwarder refuses the stream")
	require.ErrorIs(t, r.p2.sink.Health(), natsink.ErrStreamAheadOfLog)
	require.ErrorContains(t, r.p2.sink.Health(), "nats stream purge "+natsink.DefaultStream)
	require.Equal(t, 1.0, gauge(t, r.p2.reg, metrics.NameNATSStreamAheadOfLog))
	c, ok := cursor(r.d)
	require.True(t, ok)
	require.Equal(t, r.kept[len(r.kept)-1].Position, c, "no event of the restored log is taken as forwarded")
	require.Equal(t, append(idsOf(r.kept), idsOf(r.lost)...), streamIDs(t, r.srv.URL), "nothing is added to the stream")

	// The operator purges the stream: the forwarder goes on from its
	// cursor, with every new event.
	r.purge(t)
	log := waitDelivered(t, r.d, len(r.kept)+r.news)
	require.Equal(t, idsOf(log[len(r.kept):]), streamIDs(t, r.srv.URL),
		"the stream holds every event after the restore point, once, in log order")
	require.NoError(t, r.p2.sink.Health())
	require.Equal(t, 0.0, gauge(t, r.p2.reg, metrics.NameNATSStreamAheadOfLog))
}

// After a restore and the purge, the stream's positions interleave with
// the lost events' (the restored log reused their transaction ids). A
// client's cursor of a lost event is CURSOR_EXPIRED from the JetStream
// source, as from the outbox ("no event of this log"), whether the source
// finds it among the events in its memory or in the stream: resuming
// after it would skip the new events numbered below it. The cursors of
// the restored log's events resume as from the outbox.
func TestSourceExpiresACursorOfALostEvent(t *testing.T) {
	t.Parallel()
	r := restoreScenario(t)
	r.purge(t)
	log := waitDelivered(t, r.d, len(r.kept)+r.news)
	ctx := context.Background()
	pgSrc := eventstream.NewReader(r.d.Pool)
	all := eventstream.Scope{AllTenants: true}

	warm := openSource(t, r.srv.URL, 100) // every event of the stream in memory
	cold := openSource(t, r.srv.URL, 1)   // only the newest
	for _, src := range []*natsink.Source{warm, cold} {
		head, err := src.Head(ctx)
		require.NoError(t, err)
		require.Equal(t, log[len(log)-1].Position, head)
	}
	inStream := 0
	for _, e := range r.lost {
		require.Equal(t, core.CodeCursorExpired, core.CodeOf(pgSrc.CheckCursor(ctx, e.Position)), "the outbox: lost %s", e.Position)
		if !e.Position.Less(log[len(r.kept)].Position) {
			inStream++ // among the stream's positions, not before them
		}
		for name, src := range map[string]*natsink.Source{"warm": warm, "cold": cold} {
			require.Equal(t, core.CodeCursorExpired, core.CodeOf(src.CheckCursor(ctx, e.Position)),
				"%s source: cursor of lost event %s", name, e.Position)
			_, err := src.Page(ctx, all, e.Position, 10)
			require.Equal(t, core.CodeCursorExpired, core.CodeOf(err), "%s source: page after lost event %s", name, e.Position)
		}
	}
	require.Greater(t, inStream, 2, "lost positions lie among the stream's")
	for i := len(r.kept); i < len(log); i++ {
		for name, src := range map[string]*natsink.Source{"warm": warm, "cold": cold} {
			require.NoError(t, src.CheckCursor(ctx, log[i].Position), "%s source: cursor of event %d", name, i)
			want := pagesOf(t, pgSrc, all, log[i].Position, 3)
			got := pagesOf(t, src, all, log[i].Position, 3)
			require.Equal(t, envelopes(t, want), envelopes(t, got), "%s source: pages after event %d", name, i)
		}
	}
}
