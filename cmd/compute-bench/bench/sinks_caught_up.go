package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/webhook"
)

// workerSinks are the sinks a fresh worker process has to bring up to the
// log's head: the projections and the webhook scheduler.
var workerSinks = []string{projections.NameReservations, projections.NameFleet, projections.NameDeviceHolders,
	projections.NameUsageWindows, webhook.SinkID}

// catchUpTimeout bounds waitSinksCaughtUp.
const catchUpTimeout = time.Minute

// waitSinksCaughtUp waits until every sink of workerSinks has passed the
// log's visible head as of the call. A worker process that has just
// started replays the whole log first (the seeded fleet, tenants and
// endpoints: about a thousand events); a measurement that overlapped that
// replay would count its work against the API, and the API's command
// admission would shed load while the replay lags. The warm-up that
// follows brings the sinks to their steady state under load. It returns
// how long the wait took.
func waitSinksCaughtUp(ctx context.Context, q *db.Queries) (time.Duration, error) {
	start := time.Now()
	heads, err := q.OutboxHeadPosition(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the log's head: %w", err)
	}
	if len(heads) == 0 {
		return 0, nil // an empty log
	}
	head := outbox.Position{TxID: heads[0].Txid, Seq: heads[0].Seq}
	ctx, cancel := context.WithTimeout(ctx, catchUpTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for _, sink := range workerSinks {
		for {
			cur, err := outbox.CursorOf(ctx, q, sink)
			if err != nil {
				return 0, err
			}
			if !cur.Less(head) {
				break
			}
			select {
			case <-ctx.Done():
				return 0, fmt.Errorf("sink %s did not reach the log's head within %s (at %s, head %s)", sink, catchUpTimeout, cur, head)
			case <-tick.C:
			}
		}
	}
	return time.Since(start), nil
}
