package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/bettercompute/compute/internal/db"
)

// ReadSinkLag is how far sink sinkID is behind the log: how long the
// oldest event after its cursor has been in it, measured at now, a
// reading of the business clock (compute_now(), which event times come
// from); 0 when the sink has handled every visible event. A sink that
// never saved a cursor is behind from the start of the log. /readyz
// reports it for a sink that has no other health signal (the JetStream
// forwarder); metrics report every sink's (compute_outbox_sink_lag_seconds).
func ReadSinkLag(ctx context.Context, q *db.Queries, sinkID string, now time.Time) (time.Duration, error) {
	cur, err := CursorOf(ctx, q, sinkID)
	if err != nil {
		return 0, err
	}
	next, err := ReadAfter(ctx, q, cur, 1)
	if err != nil {
		return 0, fmt.Errorf("lag of sink %s: %w", sinkID, err)
	}
	if len(next) == 0 {
		return 0, nil
	}
	return max(now.Sub(next[0].Time), 0), nil
}
