package webhook_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/webhook"
)

// backlog gives tenant h0 three endpoints at url, marked failing unless
// not, and perEndpoint deliveries to each; it returns the deliveries.
func (f *fixture) backlog(t *testing.T, url string, perEndpoint int, failing bool) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	actor := core.Actor{TokenID: "tok_h0", Tenant: "h0", Identity: "h", Role: core.RoleMember}
	var mine []string
	for j := range 3 {
		mine = append(mine, f.createEndpoint(t, actor, fmt.Sprintf("%s/h0/%d", url, j), "reservation.booked").ID)
	}
	if failing {
		_, err := f.pg.Pool.Exec(ctx, `UPDATE webhook_endpoints SET consecutive_failures = 1, failing_since = compute_now()
			WHERE id = ANY($1)`, mine)
		require.NoError(t, err)
	}
	var ids []uuid.UUID
	for range perEndpoint {
		ev := f.emit(t, actor.Tenant, "reservation.booked")
		for _, id := range mine {
			ids = append(ids, f.scheduled(t, id, ev).ID)
		}
	}
	return ids
}

// A tenant's deliveries to endpoints that hang cost claims in proportion
// to what the tenant can send, not to its backlog. Its suspect share (2
// of a cap of 4) frees two slots per request timeout; each of the other
// deliveries used to come back on its own within one timeout, so a
// backlog of 30 cost 28 claims per timeout that could only be refused
// and put back (8 tenants of 220 such deliveries: about 150 claims a
// second, and a healthy tenant's deliveries waited behind them). They now
// wait for turns of the tenant's line, spaced half a timeout apart: at
// most about two come due per timeout.
func TestHangingTenantsBacklogCostsClaimsPerSlot(t *testing.T) {
	t.Parallel()
	const timeout = time.Minute
	f := setup(t, webhook.Config{MaxInflightPerTenant: 4, MaxInflightPerEndpoint: 2, SlotWait: -1, Timeout: timeout})
	slow := newGate(t)
	ids := f.backlog(t, slow.URL, 10, true)
	require.Len(t, ids, 30)

	ctx := context.Background()
	ran := make(chan struct{})
	go func() { defer close(ran); _, _ = f.worker.RunOnce(ctx) }()
	t.Cleanup(func() { slow.release(); <-ran })
	var waits []time.Duration
	require.Eventually(t, func() bool {
		waits = waits[:0]
		now := f.pg.Now(t)
		for _, id := range ids {
			if nb := f.notBefore(t, id); nb.After(now) {
				waits = append(waits, nb.Sub(now))
			}
		}
		return len(waits) == 28 && slow.held.Load() == 2
	}, 20*time.Second, 10*time.Millisecond, "two hang (the suspect share), 28 are put back")
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	require.GreaterOrEqual(t, waits[0], timeout/2, "the first turn comes after half the timeout or more")
	for k := 1; k <= 4; k++ {
		due := 0
		for _, w := range waits {
			if w <= time.Duration(k)*timeout {
				due++
			}
		}
		require.LessOrEqual(t, due, 2*k, "at most the suspect share's slots come due per timeout (within %d timeouts: %v)", k, waits)
	}
}

// An endpoint whose deliveries wait for turns of its tenant's line gets
// them back at its first success, and the line starts afresh: it was set
// for endpoints that hang, not for one that answers.
func TestSuspectTurnsEndAtTheEndpointsFirstSuccess(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{MaxInflightPerTenant: 2, MaxInflightPerEndpoint: 2, SlotWait: -1, Timeout: time.Minute})
	slow := newGate(t)
	ids := f.backlog(t, slow.URL, 4, true)
	f.worker.Concurrency = len(ids) // all start at once, before the release
	ctx := context.Background()
	ran := make(chan struct{})
	go func() { defer close(ran); _, _ = f.worker.RunOnce(ctx) }()
	var later []uuid.UUID
	require.Eventually(t, func() bool {
		later = later[:0]
		now, deferred := f.pg.Now(t), 0
		for _, id := range ids {
			nb := f.notBefore(t, id)
			if nb.After(now) {
				deferred++
			}
			if nb.After(now.Add(time.Minute)) {
				later = append(later, id)
			}
		}
		return slow.held.Load() == 1 && deferred == len(ids)-1
	}, 20*time.Second, 10*time.Millisecond, "one hangs (the suspect share), the others wait for their turn")
	require.NotEmpty(t, later, "some turns are more than a timeout away")
	slow.release() // the endpoints answer now
	<-ran
	// The hanging request answered 204: its endpoint is healthy again,
	// and its deliveries waiting for a turn are due again.
	var answered []string
	rows, err := f.pg.Pool.Query(ctx, `SELECT id FROM webhook_endpoints WHERE tenant_id = 'h0' AND consecutive_failures = 0`)
	require.NoError(t, err)
	answered, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, answered, 1)
	now := f.pg.Now(t)
	for _, id := range later {
		d := f.delivery(t, id)
		if d.EndpointID == answered[0] && d.State == webhook.StatePending {
			require.False(t, f.notBefore(t, id).After(now), "delivery %s of the endpoint that answered is due again", id)
		}
	}
	n := 0
	for _, id := range later {
		if f.delivery(t, id).EndpointID == answered[0] {
			n++
		}
	}
	require.Positive(t, n, "the endpoint that answered had deliveries waiting for a turn")
	var next time.Time
	require.NoError(t, f.pg.Pool.QueryRow(ctx, `SELECT next_at FROM webhook_suspect_turns WHERE tenant_id = 'h0'`).Scan(&next))
	require.False(t, next.After(now), "the tenant's line starts afresh")
}
