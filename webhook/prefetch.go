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

// prefetchFresh is how old a prefetched delivery that took no slot may be
// when its item runs; an older one is read again.
const prefetchFresh = time.Second

// prefetched is a delivery read with the rest of its claim: d, or found
// false when the delivery is gone; at is when, by the wall clock. slot
// says the read took the delivery's in-flight slot: its attempt may start
// at once, and the slot is the handler's to free.
type prefetched struct {
	d     db.WebhookDeliveryLoadRow
	found bool
	slot  bool
	at    time.Time
}

// Prefetch is the work-queue Prefetch hook of KindDeliver: register it
// with worker.HandlePrefetch(webhook.KindDeliver, svc.Prefetch). In one
// statement (WebhookDeliveryLoadMany) it reads the deliveries of the
// items a claim took, and takes the in-flight slot of each that may be
// attempted now and whose caps are not plainly full: a claim of n
// deliveries costs one round trip and one commit, not n reads and n
// acquires. The worker starts the items at once (workqueue.Prefetch), so
// a slot taken here is held no longer than one taken by Deliver. Each
// Deliver checks what it finds as if it had read it itself, and frees a
// slot taken here as its own.
func (s *Service) Prefetch(ctx context.Context, items []workqueue.Item) error {
	p := db.WebhookDeliveryLoadManyParams{
		HoldSeconds:  s.cfg.SlotHold().Seconds(),
		MaxPerTenant: int32(s.cfg.MaxInflightPerTenant), MaxPerEndpoint: int32(s.cfg.MaxInflightPerEndpoint),
	}
	for _, it := range items {
		if id, err := uuid.Parse(it.Key); err == nil {
			p.Ids = append(p.Ids, id)
			p.LeaseNames = append(p.LeaseNames, it.Lease.Name)
			p.LeaseEpochs = append(p.LeaseEpochs, it.Lease.Epoch)
			p.LeaseOwner = it.Lease.Owner
		}
	}
	if len(p.Ids) == 0 {
		return nil
	}
	rows, err := db.New(s.pool).WebhookDeliveryLoadMany(ctx, p)
	if err != nil {
		return fmt.Errorf("load %d webhook deliveries: %w", len(p.Ids), err)
	}
	at := time.Now()
	byID := make(map[uuid.UUID]prefetched, len(rows))
	for _, r := range rows {
		byID[r.ID] = prefetchedOf(r, at)
	}
	for i := range items {
		if id, err := uuid.Parse(items[i].Key); err == nil {
			pf, ok := byID[id]
			if !ok {
				pf = prefetched{at: at} // gone
			}
			items[i].Prefetched = pf
		}
	}
	return nil
}

// prefetchedOf is the delivery of r as Deliver reads it. When the read
// tried for a slot and found none, the counts and the breaker it saw
// under the tenant lock replace those read before it, so that Deliver
// does not try again for a slot that is plainly not there.
func prefetchedOf(r db.WebhookDeliveryLoadManyRow, at time.Time) prefetched {
	d := db.WebhookDeliveryLoadRow{
		ID: r.ID, EndpointID: r.EndpointID, EventID: r.EventID, State: r.State, Attempts: r.Attempts,
		NextAttemptAt: r.NextAttemptAt, Url: r.Url, Secret: r.Secret, PreviousSecret: r.PreviousSecret,
		PreviousSecretUntil: r.PreviousSecretUntil, Enabled: r.Enabled, TenantID: r.TenantID,
		BreakerOpenUntil: r.BreakerOpenUntil, Failing: r.Failing, Answered: r.Answered, EventType: r.EventType, EventSubject: r.EventSubject,
		EventData: r.EventData, EventTime: r.EventTime, Now: r.Now,
		TenantInflight: r.TenantInflight, EndpointInflight: r.EndpointInflight,
	}
	if r.SlotTried && !r.SlotAcquired {
		d.TenantInflight, d.EndpointInflight = r.SlotTenantInflight, r.SlotEndpointInflight
		if r.SlotBreakerOpenUntil.After(r.Now) {
			open := r.SlotBreakerOpenUntil
			d.BreakerOpenUntil = &open
		}
	}
	return prefetched{d: d, found: true, slot: r.SlotAcquired, at: at}
}

// load returns the delivery of it: the one Prefetch read, if it took the
// delivery's slot or is fresh, else read now. found is false when the
// delivery is gone (its endpoint was deleted, or retention pruned its
// event); slot is true when the delivery holds its slot already.
func (s *Service) load(ctx context.Context, it workqueue.Item, id uuid.UUID) (d db.WebhookDeliveryLoadRow, found, slot bool, err error) {
	if p, ok := it.Prefetched.(prefetched); ok && (p.slot || time.Since(p.at) < prefetchFresh) {
		return p.d, p.found, p.slot, nil
	}
	d, err = db.New(s.pool).WebhookDeliveryLoad(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, false, false, nil
	}
	if err != nil {
		return d, false, false, fmt.Errorf("load webhook delivery %s: %w", id, err)
	}
	return d, true, false, nil
}
