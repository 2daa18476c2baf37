package webhook_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/webhook"
)

// A slot handed over to a delivery that took a slot of its own a moment
// before (the waiter's recheck won the race) is only freed, without an
// error: the handover runs in the transaction that records the success,
// and a unique violation there undid the record, so the delivery was
// POSTed a second time (the benchmark saw it about once in 2,500).
func TestHandOverToADeliveryHoldingASlotFreesIt(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	ep := f.createEndpoint(t, acmeMember, "https://hooks.acme.example/a")
	first := f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked"))
	second := f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.released"))
	for _, d := range []db.WebhookDelivery{first, second} {
		_, err := f.pg.Pool.Exec(ctx, `INSERT INTO webhook_inflight (delivery_id, endpoint_id, tenant_id, until)
			VALUES ($1, $2, 'acme', compute_now() + interval '1 minute')`, d.ID, ep.ID)
		require.NoError(t, err)
	}
	n, err := f.pg.Q.WebhookSlotHandOver(ctx, db.WebhookSlotHandOverParams{FromDelivery: first.ID, ToDelivery: second.ID, HoldSeconds: 60})
	require.NoError(t, err, "no unique violation")
	require.Zero(t, n, "the waiter keeps the slot it had; nothing is handed over")
	counts, err := f.pg.Q.WebhookSlotCounts(ctx, db.WebhookSlotCountsParams{TenantID: "acme", EndpointID: ep.ID})
	require.NoError(t, err)
	require.EqualValues(t, 1, counts.EndpointInflight, "the finished delivery's slot is freed")

	third := f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.expired"))
	n, err = f.pg.Q.WebhookSlotHandOver(ctx, db.WebhookSlotHandOverParams{FromDelivery: second.ID, ToDelivery: third.ID, HoldSeconds: 60})
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "a waiter without a slot gets the finished one's")
	counts, err = f.pg.Q.WebhookSlotCounts(ctx, db.WebhookSlotCountsParams{TenantID: "acme", EndpointID: ep.ID})
	require.NoError(t, err)
	require.EqualValues(t, 1, counts.EndpointInflight, "handed over, not added")
}
