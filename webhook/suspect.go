package webhook

import (
	"time"

	"github.com/google/uuid"

	"github.com/bettercompute/compute/internal/db"
)

// The suspect half of the delivery pool. A request holds one goroutine of
// this process's delivery pool (Config.Concurrency) until its response is
// in or its timeout ends. The tenant caps bound what one tenant holds, not
// what several hold together: five tenants whose 20 new endpoints hang
// took their 8 slots each, 40 wanted of a pool of 32, and every other
// tenant's deliveries waited for their timeouts (23 to 32 s median in the
// demo, for about two minutes, until every hanging endpoint had failed
// once). A delivery is suspect when its endpoint is failing (its last
// attempt failed) or has never answered with a 2xx
// (webhook_endpoints.answered): suspect requests hold at most half of the
// pool at once (suspectCap), so that the other half is always there for
// endpoints that have answered, however many tenants' endpoints hang.

// suspectScope is the slot scope of this process's suspect requests.
const suspectScope = "s:"

// suspect says whether d's endpoint has yet to show that it answers.
func suspect(d db.WebhookDeliveryLoadRow) bool { return d.Failing || !d.Answered }

// suspectCap is how many suspect requests this process runs at once: half
// its delivery pool, at least one.
func (s *Service) suspectCap() int { return max(1, s.cfg.Concurrency/2) }

// admitSuspect takes a place among the process's suspect requests for d,
// if d is suspect, once its slot is taken and just before its request;
// the place is given back with the slot (slotState.finished). It returns
// false, and how long to wait, when the places are all taken: until half
// the timeout to all of it when each of them has run for over a second
// (they free only as they time out, and a backlog of deliveries coming
// back every few seconds would only cost claims), else at the pace they
// free (slotState.retryAfter). The delivery's slot is then freed; its
// attempt count and schedule stay.
func (s *Service) admitSuspect(d db.WebhookDeliveryLoadRow) (bool, time.Duration) {
	if !suspect(d) {
		return true, 0
	}
	now := time.Now()
	if s.slots.reserve(suspectScope, d.ID, s.suspectCap(), now) {
		return true, 0
	}
	if d.Failing || s.slots.stalled(suspectScope, slotStalledAfter, now) {
		return false, s.failingRetry()
	}
	return false, s.slots.retryAfter(suspectScope, s.suspectCap(), s.cfg.SlotRetry, s.cfg.Rand(), now)
}

// reserve adds the request id to the scope key unless limit are in flight
// there already.
func (r *slotState) reserve(key string, id uuid.UUID, limit int, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	sc := r.scope(key)
	if _, ok := sc.inflight[id]; !ok && len(sc.inflight) >= limit {
		return false
	}
	sc.inflight[id] = now
	return true
}
