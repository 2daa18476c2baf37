package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/workqueue"
)

// prefetchFresh is how old a prefetched delivery may be when its item
// runs; an older one (its item waited for a free run) is read again.
const prefetchFresh = time.Second

// prefetched is a delivery read with the rest of its claim: d, or found
// false when the delivery is gone; at is when, by the wall clock.
type prefetched struct {
	d     db.WebhookDeliveryLoadRow
	found bool
	at    time.Time
}

// Prefetch is the work-queue Prefetch hook of KindDeliver: register it
// with worker.HandlePrefetch(webhook.KindDeliver, svc.Prefetch). It reads
// the deliveries of the items one claim took in one statement
// (WebhookDeliveryLoadMany), so a claim of n deliveries costs one read,
// not n. Each Deliver checks what it finds as if it had read it itself.
func (s *Service) Prefetch(ctx context.Context, items []workqueue.Item) error {
	ids := make([]uuid.UUID, 0, len(items))
	for _, it := range items {
		if id, err := uuid.Parse(it.Key); err == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := db.New(s.pool).WebhookDeliveryLoadMany(ctx, ids)
	if err != nil {
		return fmt.Errorf("load %d webhook deliveries: %w", len(ids), err)
	}
	at := time.Now()
	byID := make(map[uuid.UUID]db.WebhookDeliveryLoadRow, len(rows))
	for _, r := range rows {
		byID[r.ID] = db.WebhookDeliveryLoadRow(r)
	}
	for i := range items {
		if id, err := uuid.Parse(items[i].Key); err == nil {
			d, found := byID[id]
			items[i].Prefetched = prefetched{d: d, found: found, at: at}
		}
	}
	return nil
}

// load returns the delivery of it: the one Prefetch read, while fresh,
// else read now. found is false when the delivery is gone (its endpoint
// was deleted, or retention pruned its event).
func (s *Service) load(ctx context.Context, it workqueue.Item, id uuid.UUID) (d db.WebhookDeliveryLoadRow, found bool, err error) {
	if p, ok := it.Prefetched.(prefetched); ok && time.Since(p.at) < prefetchFresh {
		return p.d, p.found, nil
	}
	d, err = db.New(s.pool).WebhookDeliveryLoad(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, false, nil
	}
	if err != nil {
		return d, false, fmt.Errorf("load webhook delivery %s: %w", id, err)
	}
	return d, true, nil
}
