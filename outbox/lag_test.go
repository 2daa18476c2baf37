package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

// A sink's lag is the age of the oldest event after its cursor: from the
// start of the log before it saved any, zero once it has handled them all.
func TestReadSinkLag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	appendEach(t, d, "lag", 3)
	log := waitVisible(t, d, 3)
	now := log[0].Time.Add(90 * time.Second)

	lag, err := outbox.ReadSinkLag(ctx, d.Q, "new-sink", now)
	require.NoError(t, err)
	require.Equal(t, 90*time.Second, lag, "a sink without a cursor is behind from the first event")

	n, err := outbox.NewDispatcher(d.Pool, "w1", recordingSink("new-sink", &recorder{}), nil).RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	lag, err = outbox.ReadSinkLag(ctx, d.Q, "new-sink", now)
	require.NoError(t, err)
	require.Zero(t, lag, "caught up")
}
