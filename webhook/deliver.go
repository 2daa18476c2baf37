package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// Delivery states, as stored in webhook_deliveries.state.
const (
	StatePending   = "pending"
	StateSucceeded = "succeeded"
	StateFailed    = "failed"    // the schedule ran out
	StateAbandoned = "abandoned" // the endpoint was disabled
)

// snippetLimit bounds the response body kept per attempt.
const snippetLimit = 1024

// Reasons an endpoint is disabled, in its disabled_reason and the event.
const (
	ReasonGone    = "gone"    // the receiver answered 410
	ReasonFailing = "failing" // failing continuously for Config.DisableAfter
)

// errAlreadyRecorded rolls back an attempt whose outcome another run
// recorded first (a re-run after a crash between the two transactions).
var errAlreadyRecorded = errors.New("webhook attempt already recorded")

// errEndpointDeleted rolls back an attempt whose endpoint was deleted while
// it ran: the delivery and the endpoint's attempts went with the endpoint,
// so there is nothing to record it against and nothing to retry. Its item
// completes, as it would had the delete come before the load (found false).
var errEndpointDeleted = errors.New("webhook endpoint deleted during the attempt")

// Deliver is the work-queue handler for KindDeliver: register it with
// worker.Handle(webhook.KindDeliver, svc.Deliver) (and Prefetch with
// worker.HandlePrefetch). It makes at most one HTTP attempt per call,
// outside any transaction, then records it in a transaction fenced by the
// item's shard lease, and returns workqueue.Again(next delay) while
// retries remain. Each delivery is its own item, so a slow endpoint holds
// up only its own deliveries. An attempt needs an in-flight slot of its
// tenant and endpoint and a closed breaker (limits.go); without them the
// call returns workqueue.Again without attempting, which costs the
// delivery nothing.
//
// A successful delivery costs the statement its claim shares (Prefetch),
// which reads it and takes its slot unless a cap is full (else
// takeSlot takes it: one round trip), the POST, and one transaction of two
// round trips that records the success, frees the slot and completes the
// work item (succeeded), returning workqueue.Completed. A failed attempt frees its slot, records in a
// transaction of its own (record) and leaves the item to the worker.
func (s *Service) Deliver(ctx context.Context, it workqueue.Item) error {
	id, err := uuid.Parse(it.Key)
	if err != nil {
		s.logger.Error("malformed webhook delivery key", "key", it.Key)
		return nil // can never succeed; retrying would only repeat the log line
	}
	d, found, slot, err := s.load(ctx, it, id)
	switch {
	case err != nil:
		return err
	case !found:
		return nil // endpoint deleted (cascade) or event pruned by retention
	}
	if done, err := s.notNow(ctx, it, d); done {
		if slot { // Prefetch checks the same before it takes a slot
			s.releaseSlot(ctx, it, d, false)
		}
		return err
	}
	if slot {
		s.slots.started(d, time.Now()) // taken by Prefetch
	} else {
		// The breaker and the in-flight caps (limits.go) may defer the
		// attempt: that costs the delivery no attempt, only a later run.
		ok, wait, err := s.takeSlot(ctx, it, d)
		if err != nil {
			return err
		}
		if !ok {
			return workqueue.Again(wait)
		}
	}
	// So may the suspect half of the process's delivery pool (suspect.go),
	// when requests that may hang hold it all.
	if ok, wait := s.admitSuspect(ctx, d); !ok {
		s.slots.unstarted(d)
		s.freeSlot(ctx, it, d, nil)
		return workqueue.Again(wait)
	}
	res := s.post(ctx, d)
	if res.succeeded() {
		// The common case, in one transaction of one round trip plus
		// its COMMIT that also frees the slot and completes the item.
		return s.succeeded(ctx, it, d, res)
	}
	// The request is over: its slot goes back before the recording, so
	// the next one starts while this one records.
	s.releaseSlot(ctx, it, d, false)
	return s.record(ctx, it, d, res)
}

// notNow says whether the delivery is not to be attempted now, and what
// its run then returns: it is over, its endpoint was disabled (the
// delivery is abandoned, fenced), or it was woken before its time.
func (s *Service) notNow(ctx context.Context, it workqueue.Item, d db.WebhookDeliveryLoadRow) (bool, error) {
	switch {
	case d.State != StatePending:
		return true, nil
	case !d.Enabled:
		return true, s.fenced(ctx, it, func(q *db.Queries) error {
			_, err := q.WebhookDeliveryAbandon(ctx, d.ID)
			return err
		})
	case d.NextAttemptAt.After(d.Now):
		// Woken early (a recover, a duplicate wake-up): keep the schedule.
		return true, workqueue.Again(d.NextAttemptAt.Sub(d.Now))
	}
	return false, nil
}

// post makes one signed attempt. The timestamp is business time
// (compute_now(), read with the delivery), so a simulated clock signs with
// simulated time.
func (s *Service) post(ctx context.Context, d db.WebhookDeliveryLoadRow) attemptResult {
	body, err := json.Marshal(core.Event{
		ID: d.EventID, Type: d.EventType, TenantID: d.TenantID, Subject: d.EventSubject,
		Data: json.RawMessage(d.EventData), Time: d.EventTime,
	})
	if err != nil {
		return attemptResult{err: fmt.Errorf("encode event: %w", err)}
	}
	secrets := []string{d.Secret}
	if d.PreviousSecret != nil && d.PreviousSecretUntil != nil && d.PreviousSecretUntil.After(d.Now) {
		secrets = append(secrets, *d.PreviousSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.Url, bytes.NewReader(body))
	if err != nil {
		return attemptResult{err: fmt.Errorf("build request: %w", err)}
	}
	if err := SetHeaders(req.Header, secrets, d.EventID.String(), d.Now, body); err != nil {
		return attemptResult{err: fmt.Errorf("sign: %w", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "BetterCompute-Webhooks/1.0")

	start := time.Now() // latency is a wall-clock measurement, not business time
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return attemptResult{latency: time.Since(start), err: err}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, snippetLimit))
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10) // let the connection be reused
	return attemptResult{
		status: resp.StatusCode, header: resp.Header, latency: time.Since(start), snippet: cleanSnippet(raw),
	}
}

// cleanSnippet makes a response prefix storable as text: valid UTF-8, no NUL
// bytes, at most snippetLimit bytes.
func cleanSnippet(b []byte) string {
	s := strings.ReplaceAll(strings.ToValidUTF8(string(b), "\uFFFD"), "\x00", "")
	for len(s) > snippetLimit {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// record writes the attempt and its consequences in one fenced transaction
// (Deliver uses it for failed attempts; succeeded records successes):
// the attempt row, the delivery's new state, the endpoint's failure clock
// and, when the endpoint must be disabled, the disable and its event
// (commands.DisableWebhookEndpoint, in this transaction).
func (s *Service) record(ctx context.Context, it workqueue.Item, d db.WebhookDeliveryLoadRow, res attemptResult) error {
	attempt := d.Attempts + 1
	var status *int32
	if res.status != 0 {
		st := int32(res.status)
		status = &st
	}
	var errText *string
	if res.err != nil {
		s.logger.Info("webhook attempt failed", "delivery", d.ID, "endpoint", d.EndpointID, "attempt", attempt,
			"err", loggedAttemptError(res.err))
		e := publicAttemptError(res.err)
		errText = &e
	} else if !res.succeeded() {
		e := fmt.Sprintf("HTTP %d", res.status)
		errText = &e
	}
	state, delay := StateSucceeded, time.Duration(0)
	err := s.fenced(ctx, it, func(q *db.Queries) error {
		inserted, err := q.WebhookAttemptInsert(ctx, db.WebhookAttemptInsertParams{
			DeliveryID: d.ID, EndpointID: d.EndpointID, EventID: d.EventID, Attempt: attempt,
			Status: status, LatencyMs: int32(res.latency.Milliseconds()), ResponseSnippet: res.snippet, Error: errText,
		})
		if err != nil {
			return fmt.Errorf("insert attempt: %w", err)
		}
		if inserted == 0 {
			return errEndpointDeleted
		}
		if res.succeeded() {
			state = StateSucceeded
			if err := q.WebhookEndpointMarkHealthy(ctx, d.EndpointID); err != nil {
				return fmt.Errorf("mark endpoint healthy: %w", err)
			}
		} else {
			if state, delay, err = s.failed(ctx, q, d, attempt, res); err != nil {
				return err
			}
		}
		n, err := q.WebhookDeliveryRecord(ctx, db.WebhookDeliveryRecordParams{
			ID: d.ID, Attempts: attempt, State: state, DelaySeconds: delay.Seconds(), LastStatus: status, LastError: errText,
		})
		if err != nil {
			return fmt.Errorf("record delivery: %w", err)
		}
		if n == 0 {
			return errAlreadyRecorded
		}
		return nil
	})
	switch {
	case errors.Is(err, errAlreadyRecorded), errors.Is(err, errEndpointDeleted):
		return nil
	case err != nil:
		return fmt.Errorf("record webhook attempt %d of %s: %w", attempt, d.ID, err)
	case state == StatePending:
		return workqueue.Again(delay)
	}
	return nil
}

// failed applies a failed attempt to the endpoint (failure clock, disable on
// 410 or after DisableAfter) and returns the delivery's next state and, if
// it stays pending, the delay before the next attempt.
func (s *Service) failed(ctx context.Context, q *db.Queries, d db.WebhookDeliveryLoadRow, attempt int32, res attemptResult) (string, time.Duration, error) {
	mark, err := q.WebhookEndpointMarkFailing(ctx, db.WebhookEndpointMarkFailingParams{
		ID: d.EndpointID, DisableAfterSeconds: s.cfg.DisableAfter.Seconds(),
		BreakerThreshold:          int32(s.cfg.BreakerThreshold),
		BreakerCooldownSeconds:    s.cfg.BreakerCooldown.Seconds(),
		BreakerMaxCooldownSeconds: s.cfg.BreakerMaxCooldown.Seconds(),
	})
	if err != nil {
		return "", 0, fmt.Errorf("mark endpoint failing: %w", err)
	}
	s.logBreaker(d, mark)
	reason := ""
	switch {
	case res.gone():
		reason = ReasonGone
	case mark.FailingTooLong:
		reason = ReasonFailing
	}
	if reason != "" {
		if err := commands.DisableWebhookEndpoint(ctx, q, d.EndpointID, reason); err != nil {
			return "", 0, err
		}
		return StateAbandoned, 0, nil
	}
	delay, more := s.cfg.nextDelay(int(attempt), res, d.Now)
	if !more {
		return StateFailed, 0, nil
	}
	return StatePending, delay, nil
}

// fenced runs fn in a transaction whose first statement is the work item's
// lease fence: a worker that lost its shard records nothing.
func (s *Service) fenced(ctx context.Context, it workqueue.Item, fn func(q *db.Queries) error) error {
	return pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := it.Lease.Fence(ctx, tx); err != nil {
			return err
		}
		return fn(db.New(tx))
	})
}
