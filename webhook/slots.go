package webhook

import (
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/bettercompute/compute/internal/db"
)

// slotState is what this process knows about the slots it takes, per
// tenant and per endpoint: how long its requests hold a slot, which of
// them are in flight, and the queue of its deferred deliveries; plus the
// waiting room, per tenant: the deliveries waiting in the process, in
// order, each woken by one slot of the tenant that the process frees.
// Times here are wall-clock durations of requests, not business time.
type slotState struct {
	mu      sync.Mutex
	scopes  map[string]*slotScope // "t:<tenant>", "e:<endpoint>", suspectScope
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

// finished records the end of a request and how long it held its slot,
// and gives back its place among the suspect requests, if it had one
// (admitSuspect).
func (r *slotState) finished(d db.WebhookDeliveryLoadRow, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, key := range []string{"t:" + d.TenantID, "e:" + d.EndpointID, suspectScope} {
		sc := r.scope(key)
		if at, ok := sc.inflight[d.ID]; ok {
			delete(sc.inflight, d.ID)
			sc.hold = ewma(sc.hold, now.Sub(at))
		}
	}
}

// unstarted forgets a request that took a slot but did not start
// (admitSuspect): how long requests hold a slot does not count it.
func (r *slotState) unstarted(d db.WebhookDeliveryLoadRow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, key := range []string{"t:" + d.TenantID, "e:" + d.EndpointID} {
		delete(r.scope(key).inflight, d.ID)
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

// stalled says whether this process has requests of the scope key in
// flight and every one of them has run for longer than after: none is
// likely to free a slot soon, so waiting for one would only hold a
// goroutine of the delivery pool.
func (r *slotState) stalled(key string, after time.Duration, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	sc, ok := r.scopes[key]
	if !ok || len(sc.inflight) == 0 {
		return false
	}
	for _, at := range sc.inflight {
		if now.Sub(at) <= after {
			return false
		}
	}
	return true
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
