package webhook_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/webhook"
)

// The scheduler creates one delivery (and one work item) per enabled
// endpoint of the event's tenant whose filter matches; none for another
// tenant, a filtered-out type, a disabled endpoint or a fleet event; and
// applying the same batch again adds nothing.
func TestSchedulerInsertsOneDeliveryPerMatchingEndpoint(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	all := f.createEndpoint(t, acmeMember, "http://127.0.0.1:1/all")
	booked := f.createEndpoint(t, acmeMember, "http://127.0.0.1:1/booked", "reservation.booked", "reservation.released")
	off := f.createEndpoint(t, acmeMember, "http://127.0.0.1:1/off")
	disabled := false
	_, err := f.svc.PatchEndpoint(ctx, acmeMember, off.ID, webhook.PatchEndpoint{Enabled: &disabled})
	require.NoError(t, err)
	theirs := f.createEndpoint(t, globexMember, "http://127.0.0.1:1/globex")

	stored := func(tenant, typ string) outbox.Stored {
		return outbox.Stored{Event: core.Event{ID: uuid.New(), TenantID: tenant, Type: typ, Subject: "x/1"}, Position: afterEveryEndpoint}
	}
	acmeBooked, acmeCordoned := stored("acme", "reservation.booked"), stored("acme", "node.cordoned")
	globexBooked, fleet := stored("globex", "reservation.booked"), stored("", "reservation.booked")
	batch := []outbox.Stored{acmeBooked, acmeCordoned, globexBooked, fleet}
	apply := func() {
		require.NoError(t, pg.InTx(ctx, f.pg.Pool, func(tx pgx.Tx) error {
			return f.svc.Scheduler().Apply(ctx, tx, batch)
		}))
	}
	apply()
	apply() // a re-read batch is harmless

	want := map[string][]outbox.Stored{
		all.ID:    {acmeBooked, acmeCordoned},
		booked.ID: {acmeBooked},
		off.ID:    nil,
		theirs.ID: {globexBooked},
	}
	total := 0
	for endpoint, events := range want {
		for _, ev := range batch {
			d, err := f.pg.Q.WebhookDeliveryByEndpointEvent(ctx, db.WebhookDeliveryByEndpointEventParams{EndpointID: endpoint, EventID: ev.ID})
			expected := false
			for _, w := range events {
				expected = expected || w.ID == ev.ID
			}
			if !expected {
				require.ErrorIs(t, err, pgx.ErrNoRows, "endpoint %s event %s", endpoint, ev.Type)
				continue
			}
			require.NoError(t, err, "endpoint %s event %s", endpoint, ev.Type)
			require.Equal(t, webhook.StatePending, d.State)
			require.Zero(t, d.Attempts)
			item, err := f.pg.Q.WorkQueueGet(ctx, db.WorkQueueGetParams{Kind: webhook.KindDeliver, Key: d.ID.String()})
			require.NoError(t, err)
			require.Equal(t, f.pg.Now(t), item.NotBefore, "due at once")
			total++
		}
	}
	require.Equal(t, 4, total)
	require.Equal(t, "webhooks", f.svc.Scheduler().ID())
}

// afterEveryEndpoint is the log position of the tests' made-up events: one
// that follows every endpoint they create, so that each is sent the event.
var afterEveryEndpoint = outbox.Position{TxID: 1 << 62}

// An endpoint is sent the events that follow it in the log, its own
// creating transaction's included, never one from before it that the
// scheduler reads after it was created: an endpoint registered during a
// burst of bookings was sent the last few bookings before it.
func TestSchedulerSendsAnEndpointOnlyWhatFollowsIt(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	ep := f.createEndpoint(t, acmeMember, "http://127.0.0.1:1/new")
	var created uint64
	require.NoError(t, f.pg.Pool.QueryRow(ctx, "SELECT created_txid FROM webhook_endpoints WHERE id = $1", ep.ID).Scan(&created))
	require.NotZero(t, created)
	at := func(txid uint64) outbox.Stored {
		return outbox.Stored{Event: core.Event{ID: uuid.New(), TenantID: "acme", Type: "reservation.booked", Subject: "x/1"},
			Position: outbox.Position{TxID: txid, Seq: 1}}
	}
	before, same, after := at(created-1), at(created), at(created+1)
	require.NoError(t, pg.InTx(ctx, f.pg.Pool, func(tx pgx.Tx) error {
		return f.svc.Scheduler().Apply(ctx, tx, []outbox.Stored{before, same, after})
	}))
	for ev, want := range map[*outbox.Stored]bool{&before: false, &same: true, &after: true} {
		_, err := f.pg.Q.WebhookDeliveryByEndpointEvent(ctx, db.WebhookDeliveryByEndpointEventParams{EndpointID: ep.ID, EventID: ev.ID})
		if want {
			require.NoError(t, err, "an event at txid %d is sent", ev.Position.TxID)
		} else {
			require.ErrorIs(t, err, pgx.ErrNoRows, "an event from before the endpoint is not sent")
		}
	}
}
