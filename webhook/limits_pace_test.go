package webhook

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
)

// Deliveries put back for a full cap queue up at the pace the scope frees
// slots, up to slotRetryMax; past it they spread over its second half.
func TestRetryAfterPacesTheBacklog(t *testing.T) {
	t.Parallel()
	r := newSlotState()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

	// Nothing seen yet: base over the cap's slots, one behind the other.
	require.Equal(t, 50*time.Millisecond, r.retryAfter("e:x", 2, 100*time.Millisecond, 0, t0))
	require.Equal(t, 100*time.Millisecond, r.retryAfter("e:x", 2, 100*time.Millisecond, 0, t0))

	// A fast endpoint: slots taken every 10 ms, held 2 ms.
	d := db.WebhookDeliveryLoadRow{TenantID: "acme", EndpointID: "fast"}
	at := t0
	for range 10 {
		d.ID = uuid.New()
		r.started(d, at)
		r.finished(d, at.Add(2*time.Millisecond))
		at = at.Add(10 * time.Millisecond)
	}
	require.Equal(t, 10*time.Millisecond, r.retryAfter("e:fast", 2, time.Second, 0, at))
	require.Equal(t, 20*time.Millisecond, r.retryAfter("e:fast", 2, time.Second, 0, at))

	// A slow one: a request in flight for 14 s makes every place 7 s long,
	// past slotRetryMax: between 2.5 and 5 s.
	d = db.WebhookDeliveryLoadRow{ID: uuid.New(), TenantID: "acme", EndpointID: "slow"}
	r.started(d, t0)
	require.Equal(t, slotRetryMax/2, r.retryAfter("e:slow", 2, time.Second, 0, t0.Add(14*time.Second)))
	require.Equal(t, slotRetryMax*3/4, r.retryAfter("e:slow", 2, time.Second, 0.5, t0.Add(14*time.Second)))
}
