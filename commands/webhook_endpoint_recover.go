package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// RecoverWebhookEndpoint replays an endpoint's unacknowledged events since
// Since.
type RecoverWebhookEndpoint struct {
	ID    string
	Since time.Time
	// MinInterval is the least time between two recovers of the endpoint.
	MinInterval time.Duration
	// Reschedule (re)schedules the deliveries, in the command's
	// transaction, and returns how many it scheduled. It belongs to the
	// webhook sink and writes only its own bookkeeping
	// (webhook_deliveries, work_queue).
	Reschedule func(ctx context.Context, q *db.Queries) (int, error)
}

// RecoverTooSoonError is the cause of a RATE_LIMITED recover: Wait is how
// long until the endpoint's next recover is admitted (Retry-After).
type RecoverTooSoonError struct{ Wait time.Duration }

func (e *RecoverTooSoonError) Error() string {
	return fmt.Sprintf("next recover admitted in %s", e.Wait)
}

// RecoverWebhookEndpoint admits the recover (one per endpoint per
// MinInterval, and one at a time; the endpoint must be enabled), runs
// Reschedule and appends webhook_endpoint.recovered. It returns the
// endpoint and how many deliveries Reschedule scheduled.
func (h *Handlers) RecoverWebhookEndpoint(ctx context.Context, actor core.Actor, cmd RecoverWebhookEndpoint) (WebhookEndpointResult, int, error) {
	if err := requireWebhookWriter(actor); err != nil {
		return WebhookEndpointResult{}, 0, err
	}
	id := cmd.ID
	var out WebhookEndpointResult
	var scheduled int
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		row, err := lockVisibleWebhookEndpoint(ctx, q, actor, id)
		if err != nil {
			return err
		}
		if !row.Enabled {
			return core.Errorf(core.CodeConflict, "webhook endpoint %s is disabled: enable it before recovering", id)
		}
		// One recover per endpoint per MinInterval, and one at a time: a
		// concurrent one waited for the row lock above and finds
		// last_recover_at just set. Rolled back with the recover if it
		// fails, so a failed recover does not count.
		admit, err := q.WebhookEndpointStartRecover(ctx, db.WebhookEndpointStartRecoverParams{
			ID: id, MinIntervalSeconds: cmd.MinInterval.Seconds(),
		})
		if err != nil {
			return pg.Translate(err, "webhook endpoint")
		}
		if !admit.Started {
			wait := time.Duration(admit.RetryAfterSeconds * float64(time.Second))
			return core.Wrap(core.CodeRateLimited, &RecoverTooSoonError{Wait: wait}, fmt.Sprintf(
				"webhook endpoint %s was recovered less than %s ago: one recover per endpoint at a time and per %s, retry in %s",
				id, cmd.MinInterval, cmd.MinInterval, wait.Round(time.Second)))
		}
		// No event it schedules is pruned under it: the prune waits for
		// this transaction (RetentionOutboxPruneLock).
		if err := q.RetentionOutboxPruneShare(ctx); err != nil {
			return pg.Translate(err, "retention lock")
		}
		if scheduled, err = cmd.Reschedule(ctx, q); err != nil {
			return err
		}
		out.Endpoint = webhookEndpointOf(row)
		out.Position, err = appendWebhookEndpointEvent(ctx, q, core.EventWebhookEndpointRecovered, row,
			core.WebhookEndpointRecoveredEventData{
				WebhookEndpointEventData: webhookEndpointEventData(row), Since: cmd.Since, Scheduled: scheduled,
			})
		return err
	})
	if err != nil {
		return WebhookEndpointResult{}, 0, fmt.Errorf("recover webhook endpoint %s: %w", id, err)
	}
	return out, scheduled, nil
}
