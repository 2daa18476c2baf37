package webhook_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/webhook"
)

// Recover and the scheduler agree on which events follow an endpoint: those
// whose transaction's id is at least the endpoint's created_txid (migration
// 0053), whatever their time says. Recover bounded by created_at instead,
// so an event of a transaction that straddled the endpoint's creation was
// sent by one and not by the other: one whose transaction took its id
// before the endpoint's but wrote after created_at was re-sent by recover
// although the scheduler had left it out, and one whose transaction began
// before the endpoint's (an earlier time) but took its id after it was
// sent by the scheduler and never by recover. An endpoint older than
// created_txid keeps the created_at bound.
func TestRecoverSendsWhatTheSchedulerSends(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	since := f.pg.Now(t).Add(-time.Hour)

	// A transaction takes its id, then the endpoint is created, then the
	// transaction writes its event, a minute after the endpoint.
	early, err := f.pg.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = early.Rollback(ctx) }()
	_, err = early.Exec(ctx, "SELECT pg_current_xact_id()")
	require.NoError(t, err)
	f.pg.AdvanceSimClock(t, time.Minute)
	ep := f.createEndpoint(t, acmeMember, "http://127.0.0.1:1/straddle", "reservation.booked")
	created := f.pg.AdvanceSimClock(t, time.Minute).Add(-time.Minute)
	idBeforeTimeAfter, err := core.NewEvent("reservation.booked", "acme", "r/1", map[string]int{"n": 1})
	require.NoError(t, err)
	_, err = outbox.Append(ctx, db.New(early), idBeforeTimeAfter)
	require.NoError(t, err)
	require.NoError(t, early.Commit(ctx))

	// The reverse: a transaction whose time is before the endpoint's (it
	// began first, as now() is its start) takes its id after it.
	f.pg.SetSimClock(t, created.Add(-30*time.Second))
	idAfterTimeBefore := f.emit(t, "acme", "reservation.booked")

	var log []outbox.Stored
	require.Eventually(t, func() bool {
		all, err := outbox.ReadAfter(ctx, f.pg.Q, outbox.Position{}, 1000)
		require.NoError(t, err)
		log = nil
		for _, e := range all {
			if e.ID == idBeforeTimeAfter.ID || e.ID == idAfterTimeBefore.ID {
				log = append(log, e)
			}
		}
		return len(log) == 2
	}, 10*time.Second, 5*time.Millisecond)
	for _, e := range log {
		require.Equal(t, e.ID == idAfterTimeBefore.ID, e.Time.Before(created), "the events' times straddle created_at")
	}

	sent := func() map[string]bool {
		t.Helper()
		out := map[string]bool{}
		for _, e := range log {
			_, err := f.pg.Q.WebhookDeliveryByEndpointEvent(ctx, db.WebhookDeliveryByEndpointEventParams{EndpointID: ep.ID, EventID: e.ID})
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				require.NoError(t, err)
			}
			out[e.ID.String()] = err == nil
		}
		return out
	}
	want := map[string]bool{idBeforeTimeAfter.ID.String(): false, idAfterTimeBefore.ID.String(): true}

	_, err = f.svc.RecoverEndpoint(ctx, acmeMember, ep.ID, since)
	require.NoError(t, err)
	require.Equal(t, want, sent(), "recover: the events that follow the endpoint in the log")

	_, err = f.pg.Pool.Exec(ctx, "DELETE FROM webhook_deliveries WHERE endpoint_id = $1", ep.ID)
	require.NoError(t, err)
	require.NoError(t, pg.InTx(ctx, f.pg.Pool, func(tx pgx.Tx) error {
		return f.svc.Scheduler().Apply(ctx, tx, log)
	}))
	require.Equal(t, want, sent(), "the scheduler: the same events")

	// An endpoint made before migration 0053 (created_txid 0, which the
	// scheduler sends every event) keeps recover's created_at bound.
	_, err = f.pg.Pool.Exec(ctx, "DELETE FROM webhook_deliveries WHERE endpoint_id = $1", ep.ID)
	require.NoError(t, err)
	_, err = f.pg.Pool.Exec(ctx, "UPDATE webhook_endpoints SET created_txid = '0' WHERE id = $1", ep.ID)
	require.NoError(t, err)
	f.pg.AdvanceSimClock(t, time.Hour) // past the recover's rate limit
	_, err = f.svc.RecoverEndpoint(ctx, acmeMember, ep.ID, since)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{idBeforeTimeAfter.ID.String(): true, idAfterTimeBefore.ID.String(): false}, sent(),
		"an endpoint older than created_txid: the events since its created_at")
}
