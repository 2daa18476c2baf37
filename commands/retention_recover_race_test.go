package commands_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
)

// A webhook recover schedules deliveries of old events, which the prune
// keeps only if it sees them pending. A prune that ran while a recover had
// not committed deleted the events under it: the deliveries stayed pending
// for ever and were never sent, while the recover counted them as
// scheduled. The prune now waits for the recovers in flight, and keeps
// what they scheduled.
func TestPruneWaitsForARecoverInFlight(t *testing.T) {
	t.Parallel()
	f := setupRetention(t)
	old := []any{f.event(t).ID, f.event(t).ID}
	_, err := f.d.Pool.Exec(f.ctx, "UPDATE webhook_endpoints SET created_at = created_at - interval '1 day'")
	require.NoError(t, err)

	scheduled, release := make(chan int, 1), make(chan struct{})
	var once sync.Once
	proceed := func() { once.Do(func() { close(release) }) }
	defer proceed() // a failed assertion must not leave the recover waiting
	recovered := make(chan error, 1)
	go func() {
		_, _, err := f.h.RecoverWebhookEndpoint(context.Background(), tenantA, commands.RecoverWebhookEndpoint{
			ID: "we_1", Since: time.Time{}, MinInterval: time.Second,
			Reschedule: func(ctx context.Context, q *db.Queries) (int, error) {
				ids, err := q.WebhookDeliveryRecover(ctx, db.WebhookDeliveryRecoverParams{EndpointID: "we_1", MaxRows: 100})
				scheduled <- len(ids)
				<-release // a slow recover: not committed yet
				return len(ids), err
			}})
		recovered <- err
	}()
	require.GreaterOrEqual(t, <-scheduled, len(old), "the old events are scheduled")

	f.d.AdvanceSimClock(t, 31*day) // the old events are past retention
	e, err := core.NewEvent("test.happened", "acme", "subject", map[string]int{"version": 1})
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(f.ctx, f.d.Pool, func(tx pgx.Tx) error {
		_, err := outbox.Append(f.ctx, db.New(tx), e)
		return err
	}))
	pruned := make(chan commands.PruneResult, 1)
	go func() { pruned <- f.prune(t) }()
	f.d.WaitForLockWait(t) // the prune waits for the recover
	proceed()
	require.NoError(t, <-recovered)
	<-pruned

	require.Equal(t, old, f.present(t, "outbox", old...), "events with pending deliveries are kept")
	require.Zero(t, f.count(t, `SELECT count(*) FROM webhook_deliveries d WHERE d.state = 'pending'
		AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.id = d.event_id)`), "no delivery pending of an event that is gone")
}
