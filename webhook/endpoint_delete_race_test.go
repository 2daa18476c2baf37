package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/webhook"
)

// A tenant deleting an endpoint while the scheduler's batch reads it does
// not fail the batch, which schedules every tenant's deliveries: the
// scheduler waits for the delete, leaves the deleted endpoint out and
// schedules the rest. Before the fix the endpoint row the statement had read
// was gone by its foreign-key check, and the whole batch failed with
// webhook_deliveries_endpoint_id_fkey until the dispatcher ran it again.
func TestSchedulerSurvivesConcurrentEndpointDelete(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	doomed := f.createEndpoint(t, acmeMember, "http://127.0.0.1:1/doomed")
	theirs := f.createEndpoint(t, globexMember, "http://127.0.0.1:1/globex")

	pause := pgtest.NewPauseAfter("WebhookEndpointDelete")
	pool, err := pg.Connect(ctx, f.pg.URL, pg.PoolOptions{MaxConns: 2, IdleInTxTimeout: time.Minute, Tracer: pause})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	deleted := make(chan error, 1)
	go func() {
		_, err := commands.New(pool, commands.Config{}).DeleteWebhookEndpoint(ctx, acmeMember, doomed.ID)
		deleted <- err
	}()
	<-pause.Reached() // the endpoint row is deleted, not yet committed

	stored := func(tenant string) outbox.Stored {
		return outbox.Stored{Event: core.Event{ID: uuid.New(), TenantID: tenant, Type: "reservation.booked", Subject: "x/1"}, Position: afterEveryEndpoint}
	}
	acme, globex := stored("acme"), stored("globex")
	scheduled := make(chan error, 1)
	go func() {
		scheduled <- pg.InTx(ctx, f.pg.Pool, func(tx pgx.Tx) error {
			return f.svc.Scheduler().Apply(ctx, tx, []outbox.Stored{acme, globex})
		})
	}()
	f.pg.WaitForLockWait(t) // the scheduler waits for the delete's row lock
	pause.Proceed()
	require.NoError(t, <-deleted)
	require.NoError(t, <-scheduled, "a concurrent delete must not fail the scheduler's batch")

	_, err = f.pg.Q.WebhookDeliveryByEndpointEvent(ctx, db.WebhookDeliveryByEndpointEventParams{EndpointID: doomed.ID, EventID: acme.ID})
	require.ErrorIs(t, err, pgx.ErrNoRows, "no delivery to the deleted endpoint")
	d, err := f.pg.Q.WebhookDeliveryByEndpointEvent(ctx, db.WebhookDeliveryByEndpointEventParams{EndpointID: theirs.ID, EventID: globex.ID})
	require.NoError(t, err, "the other tenant's delivery is scheduled in the same batch")
	require.Equal(t, webhook.StatePending, d.State)
}

// An attempt whose endpoint is deleted while its POST is in flight is not
// recorded and not retried: the delivery and the endpoint's attempts went
// with the endpoint, and the item completes as it would had the delete come
// before the attempt. Before the fix the attempt's insert failed its
// foreign key, the item failed (a warning) and ran again later only to find
// nothing. Both ways of recording are covered: a success (one batch) and a
// failure (its own transaction).
func TestAttemptOfDeletedEndpointCompletes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
	}{{"success", http.StatusOK}, {"failure", http.StatusInternalServerError}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, webhook.Config{})
			ctx := context.Background()
			var endpointID atomic.Value
			deleted := make(chan error, 1)
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, err := f.svc.DeleteEndpoint(context.Background(), acmeMember, endpointID.Load().(string))
				deleted <- err
				w.WriteHeader(tc.status)
			}))
			t.Cleanup(rcv.Close)
			e := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked") // not its own webhook_endpoint.created
			endpointID.Store(e.ID)
			d := f.scheduled(t, e.ID, f.emit(t, "acme", "reservation.booked"))

			require.Equal(t, 1, f.runWorker(t))
			require.NoError(t, <-deleted)
			_, err := f.pg.Q.WorkQueueGet(ctx, db.WorkQueueGetParams{Kind: webhook.KindDeliver, Key: d.ID.String()})
			require.ErrorIs(t, err, pgx.ErrNoRows, "the item completed rather than failing to run again")
			_, err = f.pg.Q.WebhookDeliveryGet(ctx, d.ID)
			require.ErrorIs(t, err, pgx.ErrNoRows, "the delivery went with its endpoint")
		})
	}
}

// Taking an in-flight slot for a delivery whose endpoint a tenant is
// deleting waits for the delete and then finds nothing (no row, as for an
// endpoint deleted before), rather than failing on webhook_inflight's
// foreign keys: in a prefetch that error failed the whole claim.
func TestSlotOfADeliveryBeingDeletedIsNotTaken(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	doomed := f.createEndpoint(t, acmeMember, "http://127.0.0.1:1/doomed", "reservation.booked")
	d := f.scheduled(t, doomed.ID, f.emit(t, "acme", "reservation.booked"))
	l, err := lease.Acquire(ctx, f.pg.Q, "shard:slot-test", "slot-test", time.Minute)
	require.NoError(t, err)

	pause := pgtest.NewPauseAfter("WebhookEndpointDelete")
	pool, err := pg.Connect(ctx, f.pg.URL, pg.PoolOptions{MaxConns: 2, IdleInTxTimeout: time.Minute, Tracer: pause})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	deleted := make(chan error, 1)
	go func() {
		_, err := commands.New(pool, commands.Config{}).DeleteWebhookEndpoint(ctx, acmeMember, doomed.ID)
		deleted <- err
	}()
	<-pause.Reached() // the endpoint row is deleted, not yet committed

	acquired := make(chan error, 1)
	go func() {
		_, err := f.pg.Q.WebhookSlotAcquire(ctx, db.WebhookSlotAcquireParams{DeliveryID: d.ID, EndpointID: doomed.ID,
			HoldSeconds: 30, MaxPerTenant: 10, MaxPerEndpoint: 10, LeaseName: l.Name, LeaseOwner: l.Owner, LeaseEpoch: l.Epoch})
		acquired <- err
	}()
	f.pg.WaitForLockWait(t) // the slot waits for the delete's row lock
	pause.Proceed()
	require.NoError(t, <-deleted)
	require.ErrorIs(t, <-acquired, pgx.ErrNoRows, "no slot, and no foreign-key error, for a deleted endpoint")
	var slots int
	require.NoError(t, f.pg.Pool.QueryRow(ctx, "SELECT count(*) FROM webhook_inflight").Scan(&slots))
	require.Zero(t, slots)
}
