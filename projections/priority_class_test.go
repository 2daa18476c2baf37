package projections_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

// A reservation event written before priority classes existed lacks
// priorityClass, priority and preemptible: the read model takes the class
// every reservation had then (standard, 0, not preemptible). A newer event
// carries them, and the row follows it.
func TestReservationPriorityClassFromOldAndNewEvents(t *testing.T) {
	t.Parallel()
	f := setup(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	event := func(seq int64, version int, extra string) outbox.Stored {
		return outbox.Stored{Event: core.Event{ID: uuid.New(), Type: core.EventReservationPending, TenantID: "acme",
			Subject: core.ReservationSubject("rsv_old"), Time: at,
			Data: []byte(`{"id":"rsv_old","tenant":"acme","state":"pending","poolId":"fra1-gpu","siteId":"",
				"start":"2026-01-02T04:00:00Z","end":"2026-01-02T05:00:00Z","nodeId":"","deviceIds":null,
				"gpus":1,"vcpu":0,"memoryMb":0,"diskGb":0,"tolerations":[],"conditions":[],"version":` +
				strconv.Itoa(version) + extra + `}`)},
			Position: outbox.Position{TxID: 1, Seq: seq}}
	}
	apply := func(e outbox.Stored) {
		t.Helper()
		require.NoError(t, pgx.BeginFunc(f.ctx, f.d.Pool, func(tx pgx.Tx) error {
			return projections.Reservations{}.Apply(f.ctx, tx, []outbox.Stored{e})
		}))
	}

	apply(event(1, 1, ""))
	got, err := f.d.Q.RmReservationGet(f.ctx, "rsv_old")
	require.NoError(t, err)
	require.Equal(t, core.LegacyPriorityClass, got.PriorityClass)
	require.Zero(t, got.Priority)
	require.False(t, got.Preemptible)

	apply(event(2, 2, `,"priorityClass":"batch","priority":-10,"preemptible":true`))
	got, err = f.d.Q.RmReservationGet(f.ctx, "rsv_old")
	require.NoError(t, err)
	require.Equal(t, "batch", got.PriorityClass)
	require.EqualValues(t, -10, got.Priority)
	require.True(t, got.Preemptible)
}
