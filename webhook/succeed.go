package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// succeeded records a successful attempt and ends its delivery, in one
// transaction fenced by the item's shard lease whose statements all
// travel with its BEGIN (pg.InTxBatch): the fence, the attempt row, the
// endpoint marked healthy (and, if it was suspect, its deliveries waiting
// for a turn brought back), the delivery recorded, the in-flight slot
// handed over to a waiting delivery of the endpoint or freed, and the
// work item completed (workqueue.CompleteIn). Two round trips after the
// POST, that batch and the COMMIT, and one commit: most deliveries
// succeed, and these round trips are what a delivery costs the database.
//
// Every statement of the batch runs whatever the ones before it found; the
// transaction then rolls back when the fence found the lease lost, the
// endpoint was deleted while the attempt ran (the attempt row found no
// delivery to go with: errEndpointDeleted) or the attempt was recorded
// already (a re-run after a crash). Nothing is written then, and the slot
// is freed in statements of its own (freeSlot), as after a failure; a
// fenced run leaves its item to the shard's new holder, the other two
// complete it.
func (s *Service) succeeded(ctx context.Context, it workqueue.Item, d db.WebhookDeliveryLoadRow, res attemptResult) error {
	s.slots.finished(d, time.Now())
	w := s.slots.takeWaiter(d, true)
	attempt := d.Attempts + 1
	status := int32(res.status)
	var held bool
	var inserted, recorded, handed int64
	err := pg.InTxBatch(ctx, s.pool, func(b *pg.Batch) {
		handed = 0
		it.Lease.FenceIn(ctx, b, &held)
		pg.ExecRows(ctx, b, (*db.Queries).WebhookAttemptInsert, db.WebhookAttemptInsertParams{
			DeliveryID: d.ID, EndpointID: d.EndpointID, EventID: d.EventID, Attempt: attempt,
			Status: &status, LatencyMs: int32(res.latency.Milliseconds()), ResponseSnippet: res.snippet,
		}, &inserted)
		pg.Exec(ctx, b, (*db.Queries).WebhookEndpointMarkHealthy, d.EndpointID)
		if suspect(d) {
			// The endpoint answers: its deliveries waiting for a turn
			// of the tenant's suspect line come back now (suspectTurn).
			pg.Exec(ctx, b, (*db.Queries).WebhookSuspectTurnRecall, d.EndpointID)
		}
		pg.ExecRows(ctx, b, (*db.Queries).WebhookDeliveryRecord, db.WebhookDeliveryRecordParams{
			ID: d.ID, Attempts: attempt, State: StateSucceeded, LastStatus: &status,
		}, &recorded)
		if w != nil {
			pg.ExecRows(ctx, b, (*db.Queries).WebhookSlotHandOver, db.WebhookSlotHandOverParams{
				FromDelivery: d.ID, ToDelivery: w.d.ID, HoldSeconds: s.cfg.SlotHold().Seconds(),
			}, &handed)
		}
		// After a handover the slot is w's: this deletes nothing.
		pg.Exec(ctx, b, (*db.Queries).WebhookSlotRelease, d.ID)
		workqueue.CompleteIn(ctx, b, it)
	}, func(pgx.Tx) error {
		switch {
		case !held:
			return lease.ErrFenced
		case inserted == 0:
			return errEndpointDeleted
		case recorded == 0:
			return errAlreadyRecorded
		}
		return nil
	})
	if err != nil {
		s.freeSlot(ctx, it, d, w)
		if errors.Is(err, errAlreadyRecorded) || errors.Is(err, errEndpointDeleted) {
			return nil
		}
		return fmt.Errorf("record webhook attempt %d of %s: %w", attempt, d.ID, err)
	}
	s.slotFreed(d, w, handed == 1)
	return workqueue.Completed
}
