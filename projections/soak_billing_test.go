package projections_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/billing"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

// setupBilling runs the billing sink, as the dispatcher role does with
// COMPUTE_BILLING_URL set, against billingEndpoint.
func (s *soak) setupBilling(t *testing.T) {
	t.Helper()
	s.bills = &billingEndpoint{windows: map[string]queries.UsageWindow{}}
	sink, err := billing.New(s.d.Pool, billing.Config{URL: "http://billing.invalid/usage", Secret: webhook.NewSecret(),
		Client: &http.Client{Transport: s.bills}}, quiet)
	require.NoError(t, err)
	s.billing = outbox.NewDispatcher(s.d.Pool, "test", sink, quiet)
}

// billingEndpoint is the billing endpoint, in process (an
// http.RoundTripper: no port): it accepts every window and keeps the last
// body sent under each key.
type billingEndpoint struct {
	mu      sync.Mutex
	windows map[string]queries.UsageWindow
}

func (e *billingEndpoint) RoundTrip(r *http.Request) (*http.Response, error) {
	var w queries.UsageWindow
	if err := json.NewDecoder(r.Body).Decode(&w); err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.windows[w.Key] = w
	e.mu.Unlock()
	return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
}

// billedMs is what the endpoint was sent per allocation, reserved ms.
func (e *billingEndpoint) billedMs() map[string]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int64{}
	for _, w := range e.windows {
		out[w.AllocationID] += w.ReservedMs
	}
	return out
}

// catchUpBilling steps the billing sink over the whole log, after the
// usage windows caught up (it waits for them).
func (s *soak) catchUpBilling(t *testing.T) {
	t.Helper()
	last := s.lastPosition(t)
	require.Eventually(t, func() bool {
		_, err := s.billing.RunOnce(s.ctx)
		require.NoError(t, err)
		cur, err := outbox.CursorOf(s.ctx, s.d.Q, billing.SinkID)
		require.NoError(t, err)
		return !cur.Less(last)
	}, waitFor, 2*time.Millisecond)
}

// requireEndedAreBilled checks that the billing endpoint was sent, for
// every allocation whose reservation ended, windows that add up to what
// it held: across pruning and the rebuild.
func (s *soak) requireEndedAreBilled(t *testing.T, when string) {
	t.Helper()
	sent := s.bills.billedMs()
	rows, err := s.d.Pool.Query(s.ctx, `
		SELECT a.id, greatest(floor(extract(epoch FROM least(upper(r.during), a.released_at)) * 1000)
		                    - floor(extract(epoch FROM greatest(lower(r.during), a.created_at)) * 1000), 0)::bigint
		  FROM allocations a JOIN reservations r ON r.id = a.reservation_id
		 WHERE r.state NOT IN ('booked', 'active') ORDER BY a.id`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var id string
		var held int64
		require.NoError(t, rows.Scan(&id, &held))
		require.Equal(t, held, sent[id], "%s: allocation %s held %d ms, the billing endpoint was sent %d", when, id, held, sent[id])
		s.counts["allocations billed"]++
	}
	require.NoError(t, rows.Err())
}

// requireBilledIsHeldSince is requireBilledIsHeld for a log that may have
// been pruned before a rebuild: an allocation the usage windows do not
// know is allowed only after the rebuild, and only while none of its
// reservation's events is left in the log (the first one the projection
// applies seeds its interval).
func (s *soak) requireBilledIsHeldSince(t *testing.T, when string) {
	t.Helper()
	rows, err := s.d.Pool.Query(s.ctx, `
		SELECT a.reservation_id FROM allocations a
		 WHERE NOT EXISTS (SELECT 1 FROM rm_usage_allocations u WHERE u.reservation_id = a.reservation_id)
		   AND (NOT $1 OR EXISTS (SELECT 1 FROM outbox o WHERE o.subject = 'reservations/' || a.reservation_id))
		 ORDER BY 1`, s.rebuilt)
	require.NoError(t, err)
	var unbilled []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		unbilled = append(unbilled, id)
	}
	rows.Close()
	require.NoError(t, rows.Err())
	require.Empty(t, unbilled, "%s: allocations the usage windows do not know", when)

	known := map[string]bool{}
	usage, err := s.d.Q.RmUsageAllocationListAll(s.ctx)
	require.NoError(t, err)
	for _, u := range usage {
		known[u.ReservationID] = true
	}
	hb, err := s.d.Pool.Query(s.ctx, heldVersusBilled)
	require.NoError(t, err)
	defer hb.Close()
	for hb.Next() {
		var h heldBilled
		require.NoError(t, hb.Scan(&h.reservation, &h.allocation, &h.heldMs, &h.bookedMs, &h.billedMs, &h.billedDeviceMs, &h.devices))
		if !known[h.reservation] {
			continue // allowed above
		}
		require.Equal(t, h.heldMs, h.billedMs, "%s: reservation %s held %d ms, billed %d", when, h.reservation, h.heldMs, h.billedMs)
		require.Equal(t, h.heldMs*int64(h.devices), h.billedDeviceMs, "%s: reservation %s device ms", when, h.reservation)
		if h.devices > 0 {
			require.Equal(t, h.bookedMs, h.billedDeviceMs, "%s: reservation %s: bookings against device ms", when, h.reservation)
		}
	}
	require.NoError(t, hb.Err())
}
