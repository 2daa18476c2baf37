package webhook

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// Recovered is the result of RecoverEndpoint.
type Recovered struct {
	// Scheduled counts the deliveries (re)scheduled.
	Scheduled int
	// Truncated is true when Config.RecoverLimit was reached: recover
	// again from the time of the last delivered event for the rest.
	Truncated bool
}

// RecoverTooSoonError is the cause of a RATE_LIMITED recover: Wait is how
// long until the endpoint's next recover is admitted (Retry-After).
type RecoverTooSoonError struct{ Wait time.Duration }

func (e *RecoverTooSoonError) Error() string {
	return fmt.Sprintf("next recover admitted in %s", e.Wait)
}

// RecoverEndpoint re-sends the endpoint's events since `since` that it has
// not acknowledged: deliveries that failed or were abandoned start afresh,
// and events that were never scheduled (the endpoint was disabled, or its
// filter excluded them then) are scheduled now. Succeeded deliveries are not
// repeated. The endpoint must be enabled.
func (s *Service) RecoverEndpoint(ctx context.Context, actor core.Actor, id string, since time.Time) (Recovered, error) {
	if err := requireWriter(actor); err != nil {
		return Recovered{}, err
	}
	var out Recovered
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		row, err := visibleEndpoint(ctx, q, actor, id, true)
		if err != nil {
			return err
		}
		if !row.Enabled {
			return core.Errorf(core.CodeConflict, "webhook endpoint %s is disabled: enable it before recovering", id)
		}
		// One recover per endpoint per RecoverInterval, and one at a time:
		// a concurrent one waited for the row lock above and finds
		// last_recover_at just set. Rolled back with the recover if it
		// fails, so a failed recover does not count.
		admit, err := q.WebhookEndpointStartRecover(ctx, db.WebhookEndpointStartRecoverParams{
			ID: id, MinIntervalSeconds: s.cfg.RecoverInterval.Seconds(),
		})
		if err != nil {
			return db.Translate(err, "webhook endpoint")
		}
		if !admit.Started {
			wait := time.Duration(admit.RetryAfterSeconds * float64(time.Second))
			return core.Wrap(core.CodeRateLimited, &RecoverTooSoonError{Wait: wait}, fmt.Sprintf(
				"webhook endpoint %s was recovered less than %s ago: one recover per endpoint at a time and per %s, retry in %s",
				id, s.cfg.RecoverInterval, s.cfg.RecoverInterval, wait.Round(time.Second)))
		}
		ids, err := q.WebhookDeliveryRecover(ctx, db.WebhookDeliveryRecoverParams{
			EndpointID: id, Since: since, MaxRows: int32(s.cfg.RecoverLimit),
		})
		if err != nil {
			return db.Translate(err, "webhook deliveries")
		}
		if err := enqueueDeliveries(ctx, q, ids); err != nil {
			return err
		}
		out = Recovered{Scheduled: len(ids), Truncated: len(ids) >= s.cfg.RecoverLimit}
		_, err = appendEndpointEvent(ctx, q, EventEndpointRecovered, row, func(d *endpointEventData) {
			d.Since, d.Scheduled = &since, &out.Scheduled
		})
		return err
	})
	if err != nil {
		return Recovered{}, fmt.Errorf("recover webhook endpoint %s: %w", id, err)
	}
	return out, nil
}

// Attempt is one recorded HTTP attempt.
type Attempt struct {
	ID         int64
	DeliveryID string
	EventID    string
	Attempt    int32
	// Status is the HTTP status, 0 when no response arrived.
	Status          int32
	LatencyMs       int32
	ResponseSnippet string // at most 1 KiB of the response body
	Error           string
	At              time.Time
}

// ListAttempts pages through an endpoint's attempts, newest first.
func (s *Service) ListAttempts(ctx context.Context, actor core.Actor, id, cursor string, limit int) (Page[Attempt], error) {
	limit = pageSize(limit)
	var before int64
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n <= 0 {
			return Page[Attempt]{}, core.Errorf(core.CodeInvalidArgument, "malformed cursor %q", cursor)
		}
		before = n
	}
	q := db.New(s.pool)
	if _, err := visibleEndpoint(ctx, q, actor, id, false); err != nil {
		return Page[Attempt]{}, fmt.Errorf("list attempts of webhook endpoint %s: %w", id, err)
	}
	rows, err := q.WebhookAttemptListByEndpoint(ctx, db.WebhookAttemptListByEndpointParams{
		EndpointID: id, BeforeID: before, MaxRows: int32(limit + 1),
	})
	if err != nil {
		return Page[Attempt]{}, fmt.Errorf("list attempts of webhook endpoint %s: %w", id, db.Translate(err, "webhook attempts"))
	}
	page := Page[Attempt]{Items: make([]Attempt, 0, min(len(rows), limit))}
	for i, r := range rows {
		if i == limit {
			page.NextCursor = strconv.FormatInt(rows[i-1].ID, 10)
			break
		}
		a := Attempt{
			ID: r.ID, DeliveryID: r.DeliveryID.String(), EventID: r.EventID.String(), Attempt: r.Attempt,
			LatencyMs: r.LatencyMs, ResponseSnippet: r.ResponseSnippet, At: r.At,
		}
		if r.Status != nil {
			a.Status = *r.Status
		}
		if r.Error != nil {
			a.Error = *r.Error
		}
		page.Items = append(page.Items, a)
	}
	return page, nil
}
