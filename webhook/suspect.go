package webhook

import (
	"context"
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
func (s *Service) admitSuspect(ctx context.Context, d db.WebhookDeliveryLoadRow) (bool, time.Duration) {
	if !suspect(d) {
		return true, 0
	}
	now := time.Now()
	if s.slots.reserve(suspectScope, d.ID, s.suspectCap(), now) {
		return true, 0
	}
	if d.Failing || s.slots.stalled(suspectScope, slotStalledAfter, now) {
		return false, s.suspectTurn(ctx, d, suspectShare(s.cfg.MaxInflightPerTenant))
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

// suspectShare is how many slots a tenant's suspect endpoints hold at most
// (webhook_slot_acquire): half its cap, at least one.
func suspectShare(maxPerTenant int) int { return max(1, maxPerTenant/2) }

// suspectTurn is how long a suspect delivery that found no slot (its
// tenant's suspect share, its endpoint's cap or the process's suspect
// half full of requests that may hang) waits before it is claimed again:
// until its turn in its tenant's line (webhook_suspect_turns, migration
// 0064). The turns are spaced by the request timeout over the slots of
// the full scope, the pace at which requests that hang free them, so a
// tenant's suspect backlog costs about one claim per slot that can free,
// however many deliveries it holds. Each deferred delivery used to come
// back on its own after half the timeout to all of it (failingRetry): 8
// tenants with 220 deliveries each to endpoints that hang cost about 150
// claims a second, every one read, refused a slot and put back, ahead of
// other tenants' deliveries in the oldest-first work queue. An empty line
// gives the first turn after failingRetry; when the line cannot be read,
// that is the wait. The turn only delays the delivery's next run: its
// attempts and schedule stay, and an endpoint's first success brings back
// its deliveries that wait for a turn and starts the tenant's line afresh
// (WebhookSuspectTurnRecall, in succeeded).
func (s *Service) suspectTurn(ctx context.Context, d db.WebhookDeliveryLoadRow, slots int) time.Duration {
	first := s.failingRetry()
	spacing := max(slotRetryMax, s.cfg.Timeout) / time.Duration(max(1, slots))
	wait, err := db.New(s.pool).WebhookSuspectTurnTake(ctx, db.WebhookSuspectTurnTakeParams{
		TenantID: d.TenantID, FirstSeconds: first.Seconds(), SpacingSeconds: spacing.Seconds(),
	})
	if err != nil {
		s.logger.Warn("take a turn for a suspect webhook delivery", "delivery", d.ID, "tenant", d.TenantID, "err", err)
		return first
	}
	return max(time.Duration(wait*float64(time.Second)), slotRetryMin)
}
