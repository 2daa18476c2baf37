package billing_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/billing"
	"github.com/bettercompute/compute/client"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

// Each window is signed at the time of its own attempt. The sink read the
// clock once per pass and signed every window of the pass with it, so
// behind a receiver that takes its time (here two minutes a window, on the
// simulated clock) the windows sent more than client.WebhookTolerance
// after the pass began carried a stale timestamp: a receiver following the
// documented recipe (client.VerifyWebhook) refused them, and each such
// window waited out a back-off before going again.
func TestBillingSignsEachWindowAtItsAttempt(t *testing.T) {
	t.Parallel()
	f := setup(t, 0)
	var mu sync.Mutex
	var statuses []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		now, err := f.d.Q.ClockNow(r.Context())
		status := http.StatusNoContent
		if err != nil || client.VerifyWebhookAt(f.secret, r.Header, body, now) != nil {
			status = http.StatusUnauthorized
		}
		_, _ = f.d.Q.SimClockAdvance(r.Context(), (2 * time.Minute).Seconds()) // a slow receiver
		mu.Lock()
		statuses = append(statuses, status)
		mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	sink, err := billing.New(f.d.Pool, billing.Config{URL: srv.URL, Secret: f.secret}, nil)
	require.NoError(t, err)

	// Booked for [0 h, 4 h), released at 3.5 h: four closed windows.
	res, err := f.h.CreateReservation(f.ctx, commandstest.TenantA, commands.CreateReservation{PoolID: commandstest.Pool,
		GPUs: 1, Start: pgtest.SimEpoch, End: pgtest.SimEpoch.Add(4 * time.Hour)})
	require.NoError(t, err)
	f.d.AdvanceSimClock(t, 210*time.Minute)
	require.NoError(t, commandstest.Activate(f.ctx, f.h, res.Reservation.ID))
	_, err = f.h.ReleaseReservation(f.ctx, commandstest.TenantA, commands.ReleaseReservation{ReservationID: res.Reservation.ID})
	require.NoError(t, err)
	f.catchUpUsage(t)

	// The sink directly, not under a dispatcher: the receiver's minutes on
	// the simulated clock would outlast the dispatcher's lease.
	events, err := outbox.ReadAfter(f.ctx, f.d.Q, outbox.Position{}, 1000)
	require.NoError(t, err)
	require.NoError(t, sink.Deliver(f.ctx, events), "every window verifies and is accepted in one pass")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{204, 204, 204, 204}, statuses)
}
