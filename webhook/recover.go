package webhook

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// Recovered is the result of RecoverEndpoint.
type Recovered struct {
	// Scheduled counts the deliveries (re)scheduled.
	Scheduled int
	// Truncated is true when Config.RecoverLimit was reached: recover
	// again (the same since will do: acknowledged events do not count
	// against the limit) for the rest.
	Truncated bool
	// RetainedSince is when the oldest retained event happened (nil: the
	// log is empty). Events of a since before it may have been pruned by
	// retention: they are not re-sent, and this is how a consumer down
	// longer than the retention learns that it lost some.
	RetainedSince *time.Time
}

// RecoverTooSoonError is the cause of a RATE_LIMITED recover: Wait is how
// long until the endpoint's next recover is admitted (Retry-After).
type RecoverTooSoonError = commands.RecoverTooSoonError

// RecoverEndpoint re-sends the endpoint's events since `since` that it has
// not acknowledged: deliveries that failed or were abandoned start afresh,
// and events that were never scheduled (the endpoint was disabled, or its
// filter excluded them then) are scheduled now. Succeeded deliveries are not
// repeated. The endpoint must be enabled. commands.RecoverWebhookEndpoint
// admits the recover and appends webhook_endpoint.recovered; the
// rescheduling, in its transaction, is this package's own bookkeeping
// (webhook_deliveries and the work queue).
func (s *Service) RecoverEndpoint(ctx context.Context, actor core.Actor, id string, since time.Time) (Recovered, error) {
	if err := requireWriter(actor); err != nil {
		return Recovered{}, err
	}
	var retained *time.Time
	_, scheduled, err := s.cmds.RecoverWebhookEndpoint(ctx, actor, commands.RecoverWebhookEndpoint{
		ID: id, Since: since, MinInterval: s.cfg.RecoverInterval,
		Reschedule: func(ctx context.Context, q *db.Queries) (int, error) {
			// Read under the prune's lock, which the command holds: no
			// event older than this is pruned while the recover runs.
			oldest, err := q.OutboxOldestTime(ctx)
			if err != nil {
				return 0, pg.Translate(err, "oldest event")
			}
			if len(oldest) > 0 {
				retained = &oldest[0]
			}
			ids, err := q.WebhookDeliveryRecover(ctx, db.WebhookDeliveryRecoverParams{
				EndpointID: id, Since: since, MaxRows: int32(s.cfg.RecoverLimit),
			})
			if err != nil {
				return 0, pg.Translate(err, "webhook deliveries")
			}
			if err := enqueueDeliveries(ctx, q, ids); err != nil {
				return 0, err
			}
			return len(ids), nil
		},
	})
	if err != nil {
		return Recovered{}, err
	}
	return Recovered{Scheduled: scheduled, Truncated: scheduled >= s.cfg.RecoverLimit, RetainedSince: retained}, nil
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
			return Page[Attempt]{}, core.Errorf(core.CodeInvalidArgument, "malformed cursor %q", core.Clip(cursor, 64))
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
		return Page[Attempt]{}, fmt.Errorf("list attempts of webhook endpoint %s: %w", id, pg.Translate(err, "webhook attempts"))
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
