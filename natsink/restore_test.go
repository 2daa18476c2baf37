package natsink_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

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
	srv := testenv.StartNATS(t)
	d := pgtest.New(t)
	cfg := fastConfig(srv.URL)
	p1 := startProcess(t, d, "p1", cfg)

	require.NoError(t, <-appendLoad(d, "kept", 2, 3))
	kept := waitDelivered(t, d, countEvents(2, 3))
	point := kept[len(kept)-1].Position
	require.NoError(t, <-appendLoad(d, "lost", 2, 3))
	all := waitDelivered(t, d, 2*countEvents(2, 3))
	lost := all[len(kept):]
	require.Equal(t, idsOf(all), streamIDs(t, srv.URL))
	p1.stop()

	restoreTo(t, d, point)
	for i, e := range lost[:3] { // new events at transaction ids the lost ones had
		appendAtTxid(t, d, e.Position.TxID, "reused-"+string(rune('a'+i)))
	}
	require.NoError(t, <-appendLoad(d, "new", 1, 3)) // and above them

	p2 := startProcess(t, d, "p2", cfg)
	require.Eventually(t, func() bool { return p2.sink.Health() != nil }, waitFor, 5*time.Millisecond,
		"the forwarder refuses the stream")
	require.ErrorIs(t, p2.sink.Health(), natsink.ErrStreamAheadOfLog)
	require.ErrorContains(t, p2.sink.Health(), "nats stream purge "+natsink.DefaultStream)
	require.Equal(t, 1.0, gauge(t, p2.reg, metrics.NameNATSStreamAheadOfLog))
	c, ok := cursor(d)
	require.True(t, ok)
	require.Equal(t, point, c, "no event of the restored log is taken as forwarded")
	require.Equal(t, idsOf(all), streamIDs(t, srv.URL), "nothing is added to the stream")

	// The operator purges the stream: the forwarder goes on from its
	// cursor, with every new event.
	nc, err := nats.Connect(srv.URL)
	require.NoError(t, err)
	defer nc.Close()
	js, err := nc.JetStream()
	require.NoError(t, err)
	require.NoError(t, js.PurgeStream(natsink.DefaultStream))
	restored := waitDelivered(t, d, len(kept)+3+countEvents(1, 3))
	require.Equal(t, idsOf(restored[len(kept):]), streamIDs(t, srv.URL),
		"the stream holds every event after the restore point, once, in log order")
	require.NoError(t, p2.sink.Health())
	require.Equal(t, 0.0, gauge(t, p2.reg, metrics.NameNATSStreamAheadOfLog))
}
