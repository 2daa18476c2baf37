package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/workqueue"
)

// Fairness between tenants. Every limit lives in the database, so all
// processes enforce one limit together:
//
//   - an attempt holds a row of webhook_inflight from before its POST
//     until the response is in; the row is taken by webhook_slot_acquire
//     (migration 0017), guarded by the tenant's and the endpoint's caps
//     under the tenant row lock; a suspect endpoint (its last attempt
//     failed, migration 0059, or it has never answered, 0063) takes one
//     only while the tenant's suspect endpoints hold fewer than half its
//     cap, so that endpoints that hang cannot keep the tenant's answering
//     ones waiting;
//   - the circuit breaker is webhook_endpoints.breaker_open_until, set by
//     the failure that makes BreakerThreshold in a row;
//   - a delivery that finds no slot or an open breaker is not attempted: its
//     work item runs again later, and its attempt count and schedule stay;
//     a suspect one runs again at its turn in its tenant's line
//     (webhook_suspect_turns, migration 0064), which hands out turns at
//     the pace requests that hang free their slots.
//
// What this process knows about the slots it takes (slotState) decides
// when a delivery that found no slot tries again, and keeps half of the
// process's delivery pool for endpoints that have answered (suspect.go):
// that one limit is the process's own, since the pool is.

// slotRetryMax bounds how long a delivery that found no free slot waits
// before it tries again: long enough that a tenant with thousands of
// deliveries queued behind slow endpoints re-checks each only now and then.
// A suspect endpoint's deliveries wait for their turn (suspectTurn).
const slotRetryMax = 5 * time.Second

// slotRetryMin is the least such wait.
const slotRetryMin = 5 * time.Millisecond

// slotStalledAfter is how long every request of a full tenant (or
// endpoint) in flight in this process must have run for its deliveries to
// stop waiting for a slot in the process (takeSlot): an endpoint that
// answers takes well under a second, and a request that hangs holds its
// slot until the timeout.
const slotStalledAfter = time.Second

// slotRecheck is how often a waiting delivery tries again for a slot that
// another process may have freed (this process's own releases wake it).
const slotRecheck = 100 * time.Millisecond

// SlotHold is how long a slot can be held: one request takes at most
// Timeout, freeing its slot a moment more. It also bounds how long the slot
// of a holder that died mid-attempt (SIGKILL) keeps counting: about as long
// as its shard lease (lease.TTL) keeps its work item from another process.
// A slot's until is its taking plus SlotHold, which is how the API's
// command admission tells how long an attempt has been in flight.
func (c Config) SlotHold() time.Duration { return c.Timeout + 15*time.Second }

// takeSlot decides whether the delivery's attempt may start now. It takes
// an in-flight slot and returns true, or returns false and how long to
// wait: until the endpoint's breaker closes, or until the full tenant or
// endpoint is likely to have a slot again (slotState.retryAfter). A few
// deliveries per tenant wait in this process for up to SlotWait instead,
// woken when the process frees one of the tenant's slots, so that a fast
// endpoint's slots never sit idle between retries; never one of a failing
// endpoint (its last attempt failed): three tenants whose endpoints hang,
// each with its slots in flight and its waiters waiting, filled the 32
// goroutines of the delivery pool, and every other tenant's deliveries
// waited tens of seconds for one.
func (s *Service) takeSlot(ctx context.Context, it workqueue.Item, d db.WebhookDeliveryLoadRow) (bool, time.Duration, error) {
	if d.BreakerOpenUntil != nil && d.BreakerOpenUntil.After(d.Now) {
		return false, d.BreakerOpenUntil.Sub(d.Now), nil
	}
	// The counts read with the delivery save the locked statement when a
	// cap is plainly full: a tenant with thousands of deliveries waiting
	// does not queue them all on its row lock.
	endpointFull := int(d.EndpointInflight) >= s.cfg.MaxInflightPerEndpoint
	full := endpointFull || int(d.TenantInflight) >= s.cfg.MaxInflightPerTenant
	if !full {
		ok, wait, epFull, err := s.acquire(ctx, it, d)
		if err != nil || ok || wait > 0 {
			return ok, wait, err
		}
		endpointFull = epFull
	}
	if s.cfg.SlotWait < 0 || d.Failing || s.slots.stalled(scopeKey(d, endpointFull), slotStalledAfter, time.Now()) {
		// A failing endpoint's delivery does not wait in the process: its
		// slots free only as its requests time out, while each waiting
		// delivery holds a goroutine of the delivery pool, which every
		// tenant shares. Nor does one whose full tenant (or endpoint) has
		// only requests here that have run longer than a wait: endpoints
		// that hang but have not failed yet, until their first timeout.
		// A delivery waiting already stops once that is so (below).
		return false, s.retryAfter(ctx, d, endpointFull), nil
	}
	w, ok := s.slots.enter(d, max(2, (s.cfg.MaxInflightPerTenant+1)/2))
	if !ok {
		return false, s.retryAfter(ctx, d, endpointFull), nil
	}
	deadline := time.NewTimer(s.cfg.SlotWait)
	defer deadline.Stop()
	recheck := time.NewTicker(slotRecheck)
	defer recheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return s.stopWaiting(w, false, 0, ctx.Err())
		case <-deadline.C:
			return s.stopWaiting(w, false, s.retryAfter(ctx, d, endpointFull), nil)
		case handedOver := <-w.wake:
			if handedOver {
				return true, 0, nil
			}
		case <-recheck.C:
			if s.slots.stalled(scopeKey(d, endpointFull), slotStalledAfter, time.Now()) {
				return s.stopWaiting(w, false, s.retryAfter(ctx, d, endpointFull), nil)
			}
		}
		ok, wait, epFull, err := s.acquire(ctx, it, d)
		if err != nil || ok || wait > 0 {
			return s.stopWaiting(w, ok, wait, err)
		}
		endpointFull = epFull
	}
}

// stopWaiting takes w out of the waiting room and passes the outcome on,
// unless a slot is being handed over to w (releaseSlot): then it waits for
// the handover, and a slot handed over is w's to use.
func (s *Service) stopWaiting(w *waiter, ok bool, wait time.Duration, err error) (bool, time.Duration, error) {
	if s.slots.leave(w) && <-w.wake && !ok {
		if err != nil {
			s.releaseSlot(context.Background(), workqueue.Item{}, w.d, false)
			return false, 0, err
		}
		return true, 0, nil
	}
	return ok, wait, err
}

// acquire takes a slot with WebhookSlotAcquire (one round trip: fence,
// tenant lock, guard). It returns true with the slot taken; false with a
// wait when the breaker is open (or the endpoint gone); false and zero when
// a cap is full, saying whether the endpoint's was.
func (s *Service) acquire(ctx context.Context, it workqueue.Item, d db.WebhookDeliveryLoadRow) (ok bool, wait time.Duration, endpointFull bool, err error) {
	row, err := db.New(s.pool).WebhookSlotAcquire(ctx, db.WebhookSlotAcquireParams{
		DeliveryID: d.ID, EndpointID: d.EndpointID, HoldSeconds: s.cfg.SlotHold().Seconds(),
		MaxPerTenant: int32(s.cfg.MaxInflightPerTenant), MaxPerEndpoint: int32(s.cfg.MaxInflightPerEndpoint),
		LeaseName: it.Lease.Name, LeaseOwner: it.Lease.Owner, LeaseEpoch: it.Lease.Epoch,
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// The endpoint was deleted meanwhile: the next run finds the
		// delivery gone and completes.
		return false, s.cfg.SlotRetry, false, nil
	case err != nil:
		return false, 0, false, fmt.Errorf("take in-flight slot for webhook delivery %s: %w", d.ID, err)
	case row.Fenced:
		return false, 0, false, lease.ErrFenced
	case row.Acquired:
		s.slots.started(d, time.Now())
		return true, 0, false, nil
	case row.BreakerOpenUntil.After(row.Now):
		return false, row.BreakerOpenUntil.Sub(row.Now), false, nil
	}
	return false, 0, int(row.EndpointInflight) >= s.cfg.MaxInflightPerEndpoint, nil
}

// releaseSlot frees the delivery's slot once its request is over, in
// statements of its own (a success frees it in the transaction that
// records it instead: succeeded). After a success it hands the slot
// straight to a delivery of the same endpoint waiting in this process, if
// any; else it deletes it and wakes a waiter of the tenant.
func (s *Service) releaseSlot(ctx context.Context, it workqueue.Item, d db.WebhookDeliveryLoadRow, succeeded bool) {
	s.slots.finished(d, time.Now())
	s.freeSlot(ctx, it, d, s.slots.takeWaiter(d, succeeded))
}

// freeSlot hands the delivery's slot over to w (one statement, no tenant
// lock), or deletes it when w is nil or the handover fails, and tells the
// slot state (slotFreed). A slot it fails to free (the database is down,
// the process is shutting down) lapses after slotHold.
func (s *Service) freeSlot(ctx context.Context, it workqueue.Item, d db.WebhookDeliveryLoadRow, w *waiter) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	q := db.New(s.pool)
	handed := false
	if w != nil {
		n, err := q.WebhookSlotHandOver(ctx, db.WebhookSlotHandOverParams{
			FromDelivery: d.ID, ToDelivery: w.d.ID, HoldSeconds: s.cfg.SlotHold().Seconds(),
		})
		handed = err == nil && n == 1
	}
	if !handed {
		if err := q.WebhookSlotRelease(ctx, d.ID); err != nil {
			s.logger.Warn("release webhook in-flight slot", "delivery", d.ID, "key", it.Key, "err", err)
		}
	}
	s.slotFreed(d, w, handed)
}

// slotFreed updates the slot state once d's slot was freed: handed over
// to w (which then starts), or deleted, which puts w (if any) back first
// in line and wakes a waiter of the tenant to try for the slot.
func (s *Service) slotFreed(d db.WebhookDeliveryLoadRow, w *waiter, handed bool) {
	if handed {
		s.slots.started(w.d, time.Now())
		w.wake <- true // takeWaiter left room in the buffer
		return
	}
	if w != nil {
		s.slots.untake(w)
		select {
		case w.wake <- false: // try for the slot freed
		default: // a wake-up is pending already
		}
	}
	s.slots.released(d.TenantID, d.EndpointID)
}

// retryAfter is when a delivery that found its endpoint's (endpointFull)
// or its tenant's cap full should try again: its place in a queue that
// this process's deferred deliveries of that endpoint or tenant form, at
// the pace slots free (slotState.retryAfter), between slotRetryMin and
// slotRetryMax. A fast endpoint's backlog thus comes back at about the
// rate it can be served; a slow one's waits up to slotRetryMax between
// looks instead of flooding the worker.
// A failing endpoint's deliveries come back later (failingRetry), and so
// do those of one that has never answered whose full tenant (or endpoint)
// has only requests in flight here that have run for over a second: new
// endpoints that hang, whose slots free only as they time out. Paced as
// any other's, 210 deliveries each of 8 tenants' new hanging endpoints
// came back every 2.5 to 5 s, and their claims held a healthy tenant's
// deliveries 3 to 4 s (median) in the demo. Such a delivery waits for its
// turn in its tenant's line (suspectTurn), spaced by how often the full
// scope's slots free as their requests time out.
func (s *Service) retryAfter(ctx context.Context, d db.WebhookDeliveryLoadRow, endpointFull bool) time.Duration {
	limit := s.cfg.MaxInflightPerTenant
	if endpointFull {
		limit = s.cfg.MaxInflightPerEndpoint
	}
	if d.Failing || (!d.Answered && s.slots.stalled(scopeKey(d, endpointFull), slotStalledAfter, time.Now())) {
		if !endpointFull {
			limit = suspectShare(s.cfg.MaxInflightPerTenant)
		}
		return s.suspectTurn(ctx, d, limit)
	}
	return s.slots.retryAfter(scopeKey(d, endpointFull), limit, s.cfg.SlotRetry, s.cfg.Rand(), time.Now())
}

// scopeKey names the slot scope whose cap d found full: its endpoint's
// (endpointFull) or its tenant's.
func scopeKey(d db.WebhookDeliveryLoadRow, endpointFull bool) string {
	if endpointFull {
		return "e:" + d.EndpointID
	}
	return "t:" + d.TenantID
}

// failingRetry is when a delivery of a failing endpoint (its last attempt
// failed) that found no slot should try again: at a random time between
// half the request timeout and all of it (at least slotRetryMax). Such an
// endpoint's slots free only as its requests time out, a few per timeout,
// so looking again every few seconds only cost the database: with 20
// hanging endpoints in each of 3 tenants, their 630 deliveries came back
// about 170 times a second, each claim, slot check and reschedule taking
// its turn in the oldest-first queue ahead of every other tenant's
// deliveries. They come back once per timeout at most now; the first
// success marks the endpoint healthy, and its deliveries pace as any
// other's (slotState.retryAfter). It is now the first turn of an empty
// line of the tenant's suspect deliveries (suspectTurn), whose later
// turns follow at the pace the scope's slots free.
func (s *Service) failingRetry() time.Duration {
	most := max(slotRetryMax, s.cfg.Timeout)
	return time.Duration(float64(most) * (0.5 + s.cfg.Rand()/2))
}

// logBreaker reports a failure that opened the endpoint's breaker.
func (s *Service) logBreaker(d db.WebhookDeliveryLoadRow, mark db.WebhookEndpointMarkFailingRow) {
	if mark.BreakerOpenUntil == nil || !mark.BreakerOpenUntil.After(d.Now) {
		return
	}
	if d.BreakerOpenUntil != nil && d.BreakerOpenUntil.Equal(*mark.BreakerOpenUntil) {
		return // it was open already
	}
	if last, ok := s.opened.Swap(d.EndpointID, *mark.BreakerOpenUntil); ok && last.(time.Time).Equal(*mark.BreakerOpenUntil) {
		return // logged already, by another attempt that failed as it opened
	}
	s.logger.Warn("webhook endpoint circuit opened", "endpoint", d.EndpointID, "tenant", d.TenantID,
		"consecutive_failures", mark.ConsecutiveFailures, "openings", mark.BreakerTrips,
		"until", mark.BreakerOpenUntil.UTC().Format(time.RFC3339))
}
