package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/natsink"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/queries"
)

// aheadOfTheLog is a cursor no event of a test's log has: another
// installation's, or one kept from before a restore.
var aheadOfTheLog = outbox.Position{TxID: 1 << 62, Seq: 1}

// requireStreamRefusesAhead subscribes to b from aheadOfTheLog, which must
// be CURSOR_EXPIRED, and from head, the newest event, which must not.
func requireStreamRefusesAhead(t *testing.T, b *eventstream.Broker, head outbox.Position) {
	t.Helper()
	ctx := context.Background()
	s, err := b.Subscribe(ctx, eventstream.Scope{AllTenants: true}, &aheadOfTheLog)
	if err == nil {
		s.Close()
	}
	require.Equal(t, core.CodeCursorExpired, core.CodeOf(err),
		"a stream resumed from a cursor ahead of the log would skip every event numbered below it: %v", err)
	s, err = b.Subscribe(ctx, eventstream.Scope{AllTenants: true}, &head)
	require.NoError(t, err, "the newest event's cursor resumes")
	s.Close()
}

func noPokes() <-chan struct{} { return nil }

// A stream served from the read replica refuses a cursor ahead of the log,
// as one served from the primary does, although the standby cannot tell
// (its next transaction id lags the primary's).
func TestReplicaStreamRefusesACursorAheadOfTheLog(t *testing.T) {
	t.Parallel()
	r := pgtest.NewReplicated(t)
	ctx := context.Background()
	e, err := core.NewEvent("test.happened", "acme", "thing-1", map[string]string{"id": "thing-1"})
	require.NoError(t, err)
	head, err := outbox.Append(ctx, r.Q, e)
	require.NoError(t, err)
	replica := &queries.Replica{Pool: r.StandbyPool, Primary: r.Pool, Logger: slog.New(slog.DiscardHandler)}
	require.Eventually(t, func() bool {
		h, err := eventstream.OutboxSource(r.StandbyPool).Head(ctx)
		if err != nil || h != head {
			return false
		}
		_, err = replica.Check(ctx, time.Now())
		return err == nil && replica.InRotation()
	}, time.Minute, 10*time.Millisecond, "the standby replays the event and is in rotation")

	cfg, err := config.Load()
	require.NoError(t, err)
	b, _, _, err := streamBroker(cfg, r.Pool, replica, "test", slog.New(slog.DiscardHandler), time.Hour, noPokes)
	require.NoError(t, err)
	requireStreamRefusesAhead(t, b, head)
}

// A stream served from JetStream refuses a cursor ahead of the log, as one
// served from the outbox does: the stream alone cannot tell it from a
// cursor a PostgreSQL-sourced process handed out just before the sink
// forwarded its event.
func TestJetStreamStreamRefusesACursorAheadOfTheLog(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	d := pgtest.New(t)
	serveDispatcher(t, d, srv.URL)
	ctx := context.Background()
	e, err := core.NewEvent("test.happened", "acme", "thing-1", map[string]string{"id": "thing-1"})
	require.NoError(t, err)
	head, err := outbox.Append(ctx, d.Q, e)
	require.NoError(t, err)
	nc, err := nats.Connect(srv.URL)
	require.NoError(t, err)
	defer nc.Close()
	js, err := nc.JetStream()
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		info, err := js.StreamInfo(natsink.DefaultStream)
		return err == nil && info.State.Msgs == 1
	}, time.Minute, 10*time.Millisecond, "the sink forwards the event")

	cfg, err := config.Load()
	require.NoError(t, err)
	cfg.DatabaseURL, cfg.NATSURL, cfg.StreamSource = d.URL, srv.URL, config.StreamSourceNATS
	b, run, _, err := streamBroker(cfg, d.Pool, nil, "test", slog.New(slog.DiscardHandler), time.Hour, noPokes)
	require.NoError(t, err)
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); run(rctx) }()
	defer func() { stop(); <-done }()
	requireStreamRefusesAhead(t, b, head)
}
