package webhook

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
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
//     under the tenant row lock;
//   - the circuit breaker is webhook_endpoints.breaker_open_until, set by
//     the failure that makes BreakerThreshold in a row;
//   - a delivery that finds no slot or an open breaker is not attempted: its
//     work item runs again later, and its attempt count and schedule stay.
//
// What this process knows about the slots it takes (slotState) only
// decides when a delivery that found no slot tries again.

// slotRetryMax bounds how long a delivery that found no free slot waits
// before it tries again: long enough that a tenant with thousands of
// deliveries queued behind slow endpoints re-checks each only now and then.
const slotRetryMax = 5 * time.Second

// slotRetryMin is the least such wait.
const slotRetryMin = 5 * time.Millisecond

// slotRecheck is how often a waiting delivery tries again for a slot that
// another process may have freed (this process's own releases wake it).
const slotRecheck = 100 * time.Millisecond

// slotHold is how long a slot can be held: one request takes at most
// Timeout, freeing its slot a moment more. It also bounds how long the slot
// of a holder that died mid-attempt (SIGKILL) keeps counting: about as long
// as its shard lease (lease.TTL) keeps its work item from another process.
func (c Config) slotHold() time.Duration { return c.Timeout + 15*time.Second }

// takeSlot decides whether the delivery's attempt may start now. It takes
// an in-flight slot and returns true, or returns false and how long to
// wait: until the endpoint's breaker closes, or until the full tenant or
// endpoint is likely to have a slot again (slotState.retryAfter). A few
// deliveries per tenant wait in this process for up to SlotWait instead,
// woken when the process frees one of the tenant's slots, so that a fast
// endpoint's slots never sit idle between retries.
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
	if s.cfg.SlotWait < 0 {
		return false, s.retryAfter(d, endpointFull), nil
	}
	w, ok := s.slots.enter(d, max(2, (s.cfg.MaxInflightPerTenant+1)/2))
	if !ok {
		return false, s.retryAfter(d, endpointFull), nil
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
			return s.stopWaiting(w, false, s.retryAfter(d, endpointFull), nil)
		case handedOver := <-w.wake:
			if handedOver {
				return true, 0, nil
			}
		case <-recheck.C:
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
		DeliveryID: d.ID, EndpointID: d.EndpointID, HoldSeconds: s.cfg.slotHold().Seconds(),
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

// releaseSlot frees the delivery's slot once its request is over. After a
// success it hands the slot straight to a delivery of the same endpoint
// waiting in this process, if any (one statement, no tenant lock); else it
// deletes it and wakes a waiter of the tenant. A slot it fails to free (the
// database is down, the process is shutting down) lapses after slotHold.
func (s *Service) releaseSlot(ctx context.Context, it workqueue.Item, d db.WebhookDeliveryLoadRow, succeeded bool) {
	now := time.Now()
	s.slots.finished(d, now)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	q := db.New(s.pool)
	if w := s.slots.takeWaiter(d, succeeded); w != nil {
		n, err := q.WebhookSlotHandOver(ctx, db.WebhookSlotHandOverParams{
			FromDelivery: d.ID, ToDelivery: w.d.ID, HoldSeconds: s.cfg.slotHold().Seconds(),
		})
		if err == nil && n == 1 {
			s.slots.started(w.d, now)
			w.wake <- true // takeWaiter left room in the buffer
			return
		}
		s.slots.untake(w)
		select {
		case w.wake <- false: // try for the slot freed below
		default: // a wake-up is pending already
		}
	}
	if err := q.WebhookSlotRelease(ctx, d.ID); err != nil {
		s.logger.Warn("release webhook in-flight slot", "delivery", d.ID, "key", it.Key, "err", err)
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
func (s *Service) retryAfter(d db.WebhookDeliveryLoadRow, endpointFull bool) time.Duration {
	key, limit := "t:"+d.TenantID, s.cfg.MaxInflightPerTenant
	if endpointFull {
		key, limit = "e:"+d.EndpointID, s.cfg.MaxInflightPerEndpoint
	}
	return s.slots.retryAfter(key, limit, s.cfg.SlotRetry, s.cfg.Rand(), time.Now())
}

// logBreaker reports a failure that opened the endpoint's breaker.
func (s *Service) logBreaker(d db.WebhookDeliveryLoadRow, mark db.WebhookEndpointMarkFailingRow) {
	if mark.BreakerOpenUntil == nil || !mark.BreakerOpenUntil.After(d.Now) {
		return
	}
	if d.BreakerOpenUntil != nil && d.BreakerOpenUntil.Equal(*mark.BreakerOpenUntil) {
		return // it was open already
	}
	s.logger.Warn("webhook endpoint circuit opened", "endpoint", d.EndpointID, "tenant", d.TenantID,
		"consecutive_failures", mark.ConsecutiveFailures, "openings", mark.BreakerTrips,
		"until", mark.BreakerOpenUntil.UTC().Format(time.RFC3339))
}

// slotState is what this process knows about the slots it takes, per
// tenant and per endpoint: how long its requests hold a slot, which of
// them are in flight, and the queue of its deferred deliveries; plus the
// waiting room, per tenant: the deliveries waiting in the process, in
// order, each woken by one slot of the tenant that the process frees.
// Times here are wall-clock durations of requests, not business time.
type slotState struct {
	mu      sync.Mutex
	scopes  map[string]*slotScope // "t:<tenant>", "e:<endpoint>"
	waiting map[string][]*waiter  // tenant → its waiters, first come first
}

type slotScope struct {
	hold     time.Duration           // moving average of how long a request held a slot
	gap      time.Duration           // moving average of the time between two slots taken
	last     time.Time               // when the last slot was taken
	inflight map[uuid.UUID]time.Time // this process's requests holding a slot, by start
	nextFree time.Time               // when the last deferred delivery is due
}

// waiter is a delivery in the waiting room. wake carries false when a
// slot of its tenant was freed (try for it) and true when a slot was
// handed over to it; taken marks a handover under way.
type waiter struct {
	d     db.WebhookDeliveryLoadRow
	wake  chan bool
	taken bool // by takeWaiter, for a handover
	left  bool // the delivery stopped waiting
}

func newSlotState() *slotState {
	return &slotState{scopes: map[string]*slotScope{}, waiting: map[string][]*waiter{}}
}

func (r *slotState) scope(key string) *slotScope {
	sc, ok := r.scopes[key]
	if !ok {
		sc = &slotScope{inflight: map[uuid.UUID]time.Time{}}
		r.scopes[key] = sc
	}
	return sc
}

// started records a request that took a slot.
func (r *slotState) started(d db.WebhookDeliveryLoadRow, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, key := range []string{"t:" + d.TenantID, "e:" + d.EndpointID} {
		sc := r.scope(key)
		sc.inflight[d.ID] = now
		if gap := now.Sub(sc.last); !sc.last.IsZero() && gap < slotRetryMax {
			sc.gap = ewma(sc.gap, gap)
		}
		sc.last = now
	}
}

// ewma moves avg an eighth of the way to x (to x when avg is unset).
func ewma(avg, x time.Duration) time.Duration {
	if avg == 0 {
		return x
	}
	return avg + (x-avg)/8
}

// finished records the end of a request and how long it held its slot.
func (r *slotState) finished(d db.WebhookDeliveryLoadRow, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, key := range []string{"t:" + d.TenantID, "e:" + d.EndpointID} {
		sc := r.scope(key)
		if at, ok := sc.inflight[d.ID]; ok {
			delete(sc.inflight, d.ID)
			sc.hold = ewma(sc.hold, now.Sub(at))
		}
	}
}

// retryAfter places one more deferred delivery of the scope key, whose cap
// is limit, in the scope's queue: behind the last one by the time it takes
// a slot of the scope to come free, which is the average time between two
// slots taken, or the average hold (or the age of the oldest request in
// flight, if longer) over limit when that is longer; base over limit before
// anything was seen. Beyond slotRetryMax the queue is not kept: the
// delivery comes back at a random time between half of it and all of it,
// so a long backlog trickles back instead of returning in one burst. rnd
// is in [0, 1).
func (r *slotState) retryAfter(key string, limit int, base time.Duration, rnd float64, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	sc := r.scope(key)
	hold := sc.hold
	for _, at := range sc.inflight {
		hold = max(hold, now.Sub(at))
	}
	if hold == 0 && sc.gap == 0 {
		hold = base
	}
	spacing := max(sc.gap, hold/time.Duration(max(limit, 1)))
	if sc.nextFree.Before(now) {
		sc.nextFree = now
	}
	if wait := sc.nextFree.Add(spacing).Sub(now); wait < slotRetryMax {
		sc.nextFree = now.Add(wait)
		return max(wait, slotRetryMin)
	}
	return time.Duration(float64(slotRetryMax) * (0.5 + rnd/2))
}

// enter admits d to its tenant's waiting room unless limit wait already.
func (r *slotState) enter(d db.WebhookDeliveryLoadRow, limit int) (*waiter, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.waiting[d.TenantID]) >= limit {
		return nil, false
	}
	w := &waiter{d: d, wake: make(chan bool, 1)}
	r.waiting[d.TenantID] = append(r.waiting[d.TenantID], w)
	return w, true
}

// leave takes w out of the waiting room. It returns true when a handover
// to w is under way: its outcome follows on w.wake.
func (r *slotState) leave(w *waiter) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.remove(w)
	w.left = true
	return w.taken
}

// untake puts back, first in line, a waiter whose handover failed, unless
// it stopped waiting meanwhile.
func (r *slotState) untake(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w.taken = false
	if !w.left {
		r.waiting[w.d.TenantID] = append([]*waiter{w}, r.waiting[w.d.TenantID]...)
	}
}

func (r *slotState) remove(w *waiter) {
	tenant := w.d.TenantID
	q := r.waiting[tenant]
	for i, o := range q {
		if o == w {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(r.waiting, tenant)
	} else {
		r.waiting[tenant] = q
	}
}

// takeWaiter picks the first waiter of d's endpoint that nothing woke yet
// for a handover of d's slot, which only a success passes on (a failure
// may open the breaker), and takes it out of the waiting room.
func (r *slotState) takeWaiter(d db.WebhookDeliveryLoadRow, succeeded bool) *waiter {
	if !succeeded {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.waiting[d.TenantID] {
		if w.d.EndpointID == d.EndpointID && len(w.wake) == 0 {
			w.taken = true
			r.remove(w)
			return w
		}
	}
	return nil
}

// released wakes one waiter of the tenant not woken yet, the first of the
// endpoint whose slot was freed if there is one, so that one freed slot
// sends one waiter, not all of them, to the tenant lock.
func (r *slotState) released(tenant, endpoint string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.waiting[tenant]
	for _, sameEndpoint := range []bool{true, false} {
		for _, w := range q {
			if sameEndpoint && w.d.EndpointID != endpoint {
				continue
			}
			select {
			case w.wake <- false:
				return
			default: // woken already, not back yet
			}
		}
	}
}
