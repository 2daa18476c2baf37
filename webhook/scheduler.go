package webhook

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
)

// Scheduler is the outbox sink that turns events into deliveries. It runs
// inside the dispatcher's transaction, which also saves its cursor, so each
// event is scheduled exactly once; it does no network I/O, so a dead
// endpoint cannot slow the log down for anyone.
type Scheduler struct{ s *Service }

// Scheduler returns the TxSink to hand to outbox.NewTxDispatcher.
func (s *Service) Scheduler() Scheduler { return Scheduler{s: s} }

// ID is the sink's name: its outbox_cursors row and lease.
func (Scheduler) ID() string { return SinkID }

var _ outbox.TxSink = Scheduler{}

// Apply inserts one delivery per enabled endpoint of each event's tenant
// whose filter matches the event's type and which the event follows in
// the log (never one from before the endpoint), and enqueues a "webhook.deliver"
// item for each new delivery: two statements for the whole batch of
// events, however many deliveries they make. Events without a tenant
// (fleet events) have no tenant endpoint to go to and are skipped.
func (Scheduler) Apply(ctx context.Context, tx pgx.Tx, events []outbox.Stored) error {
	p := db.WebhookDeliveryScheduleParams{}
	for _, e := range events {
		if e.TenantID == "" {
			continue
		}
		p.EventIds = append(p.EventIds, e.ID)
		p.TenantIds = append(p.TenantIds, e.TenantID)
		p.Types = append(p.Types, e.Type)
		p.Txids = append(p.Txids, e.Position.TxID)
	}
	if len(p.EventIds) == 0 {
		return nil
	}
	q := db.New(tx)
	ids, err := q.WebhookDeliverySchedule(ctx, p)
	if err != nil {
		return fmt.Errorf("schedule webhook deliveries for %d events: %w", len(p.EventIds), err)
	}
	return enqueueDeliveries(ctx, q, ids)
}

// enqueueDeliveries wakes the delivery handler for each delivery, now, in
// one statement however many there are (workqueue.EnqueueMany).
func enqueueDeliveries(ctx context.Context, q *db.Queries, ids []uuid.UUID) error {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = id.String()
	}
	return workqueue.EnqueueMany(ctx, q, KindDeliver, keys, 0)
}
