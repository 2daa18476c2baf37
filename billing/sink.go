package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

// SinkID names the billing sink: its outbox_cursors row and its lease
// singleton:outbox-dispatch:billing.
const SinkID = "billing"

// DefaultSchedule is the delay after each failed attempt at a window; the
// last one repeats for as long as the endpoint fails. Billing is never
// given up: an unsent window is unbilled usage.
var DefaultSchedule = []time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour,
}

// DefaultTimeout bounds one attempt.
const DefaultTimeout = 15 * time.Second

// maxRetryAfter caps a receiver's Retry-After.
const maxRetryAfter = time.Hour

// Config is where and how closed windows are sent.
type Config struct {
	// URL receives one POST per closed window.
	URL string
	// Secret signs the requests (whsec_<base64>, at least 24 bytes), as a
	// webhook endpoint's secret does.
	Secret string
	// Timeout bounds one attempt (default DefaultTimeout).
	Timeout time.Duration
	// Schedule is the delay after each failed attempt (default
	// DefaultSchedule); its last delay repeats.
	Schedule []time.Duration
	// MaxWait is how long one Deliver may wait, in real time, for a
	// window's next attempt or for the usage-windows projection to reach
	// the batch, before it hands the batch back to the dispatcher (which
	// logs it and delivers it again). Zero: never wait; each Deliver makes
	// the attempts that are due and returns, which is what tests step.
	MaxWait time.Duration
	// Client sends the requests (default: an http.Client with Timeout that
	// follows no redirect).
	Client *http.Client
}

// Sink is the billing sink: an outbox.Sink, delivered at least once by an
// outbox.Dispatcher under its own lease and cursor.
type Sink struct {
	pool   *pgxpool.Pool
	cfg    Config
	logger *slog.Logger
}

// New checks cfg and returns the sink.
func New(pool *pgxpool.Pool, cfg Config, logger *slog.Logger) (*Sink, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("billing: URL %q is not an http(s) URL", cfg.URL)
	}
	if _, err := webhook.Sign([]string{cfg.Secret}, "check", time.Unix(0, 0), nil); err != nil {
		return nil, fmt.Errorf("billing: secret: %w", err)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if len(cfg.Schedule) == 0 {
		cfg.Schedule = DefaultSchedule
	}
	if cfg.Client == nil {
		// A 3xx is a failed attempt, never followed: following a 302 or
		// 303 turns the POST into a body-less GET whose 2xx would record
		// the window as accepted though no receiver saw it, and a 307 or
		// 308 sends the signed window wherever Location names.
		cfg.Client = &http.Client{Timeout: cfg.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Sink{pool: pool, cfg: cfg, logger: logger.With("sink", SinkID)}, nil
}

// ID names the sink.
func (s *Sink) ID() string { return SinkID }

var _ outbox.Sink = (*Sink)(nil)

// endedEvents are the events after which a reservation's windows are all
// closed.
var endedEvents = map[string]bool{
	core.EventReservationReleased: true, core.EventReservationCancelled: true,
	core.EventReservationExpired: true, core.EventReservationFailed: true, core.EventReservationPreempted: true,
}

// ended is a reservation that ended in the batch, and where.
type ended struct {
	reservationID string
	at            outbox.Position
}

// Deliver sends the closed windows of every placed reservation that ended
// in the batch, oldest first, and returns nil only when the endpoint has
// accepted all of them (now or in an earlier attempt). Otherwise the
// batch stays undelivered and comes back.
func (s *Sink) Deliver(ctx context.Context, events []outbox.Stored) error {
	var rs []ended
	for _, e := range events {
		if !endedEvents[e.Type] {
			continue
		}
		var d core.ReservationEventData
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return fmt.Errorf("decode %s %s: %w", e.Type, e.ID, err)
		}
		if d.NodeID != "" { // never placed: it reserved nothing
			rs = append(rs, ended{reservationID: d.ID, at: e.Position})
		}
	}
	if len(rs) == 0 {
		return nil
	}
	var deadline time.Time
	if s.cfg.MaxWait > 0 {
		deadline = time.Now().Add(s.cfg.MaxWait) // real time: how long this call may block
	}
	if err := s.waitForUsage(ctx, rs[len(rs)-1].at, deadline); err != nil {
		return err
	}
	usage := queries.New(s.pool)
	var windows []queries.UsageWindow
	for _, r := range rs {
		ws, err := usage.ClosedUsageWindows(ctx, r.reservationID)
		if err != nil {
			return err
		}
		windows = append(windows, ws...)
	}
	for {
		left, wait, err := s.sendDue(ctx, windows)
		if err != nil || left == 0 {
			return err
		}
		if deadline.IsZero() {
			return fmt.Errorf("%d closed usage windows not accepted by the billing endpoint yet; next attempt in %s", left, wait)
		}
		if remaining := time.Until(deadline); remaining < wait {
			// The next attempt is due after this call's deadline: wait the
			// deadline out before handing the batch back. Returning at
			// once made the dispatcher, which polls every second, log
			// this line every second while the endpoint was down, rather
			// than about once per MaxWait.
			if err := sleep(ctx, remaining); err != nil {
				return err
			}
			return fmt.Errorf("%d closed usage windows not accepted by the billing endpoint yet; next attempt in %s", left, wait-remaining)
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// waitForUsage waits until the usage-windows projection has applied the
// log up to at: the windows of a reservation are final only once its end
// is applied there. Past the deadline (or at once without one), a
// projection still behind hands the batch back.
func (s *Sink) waitForUsage(ctx context.Context, at outbox.Position, deadline time.Time) error {
	q := db.New(s.pool)
	for {
		cur, err := outbox.CursorOf(ctx, q, projections.NameUsageWindows)
		if err != nil {
			return err
		}
		if !cur.Less(at) {
			return nil
		}
		if deadline.IsZero() || time.Now().After(deadline) {
			return fmt.Errorf("the %s projection is at %s, behind %s: billing waits for it", projections.NameUsageWindows, cur, at)
		}
		if err := sleep(ctx, min(time.Second, time.Until(deadline))); err != nil {
			return err
		}
	}
}

// sendDue makes the attempts that are due, in window order, and stops at
// the first failure (the endpoint is likely down: the other windows would
// only wait out their timeouts). It returns how many windows are still
// unaccepted and how long until the next of them is due.
func (s *Sink) sendDue(ctx context.Context, windows []queries.UsageWindow) (left int, wait time.Duration, err error) {
	q := db.New(s.pool)
	keys := make([]string, len(windows))
	for i, w := range windows {
		keys[i] = w.Key
	}
	rows, err := q.BillingDeliveryStates(ctx, keys)
	if err != nil {
		return 0, 0, fmt.Errorf("billing attempts: %w", err)
	}
	states := make(map[string]db.BillingDeliveryStatesRow, len(rows))
	for _, r := range rows {
		states[r.Key] = r
	}
	for i, w := range windows {
		// The clock is read for each window, not once per pass: its
		// signature carries this time, and behind a slow receiver a pass
		// outlasts the tolerance a receiver verifies it with
		// (client.WebhookTolerance).
		now, err := q.ClockNow(ctx)
		if err != nil {
			return 0, 0, fmt.Errorf("clock: %w", err)
		}
		st, tried := states[w.Key]
		switch {
		case tried && st.DeliveredAt != nil:
			continue
		case tried && st.NextAttemptAt.After(now):
			return undelivered(windows[i:], states), st.NextAttemptAt.Sub(now), nil
		}
		res := s.post(ctx, w, now)
		if ctx.Err() != nil {
			return 0, 0, context.Cause(ctx) // lease lost or shutting down: not the endpoint's failure
		}
		delay := time.Duration(0)
		if !res.ok() {
			delay = s.delay(int(st.Attempts), res)
		}
		rec := db.BillingDeliveryRecordParams{Key: w.Key, AllocationID: w.AllocationID, TenantID: w.Tenant,
			WindowStart: w.WindowStart, LastStatus: res.statusPtr(), LastError: res.errText(),
			RetryAfterMs: delay.Milliseconds(), Delivered: res.ok()}
		if err := q.BillingDeliveryRecord(ctx, rec); err != nil {
			return 0, 0, fmt.Errorf("record billing attempt %s: %w", w.Key, err)
		}
		if !res.ok() {
			s.logFailure(w.Key, res, st.Attempts+1, delay)
			return undelivered(windows[i:], states), delay, nil
		}
		s.logger.Debug("usage window billed", "key", w.Key, "attempt", st.Attempts+1)
	}
	return 0, 0, nil
}

// logFailure says why a window was not accepted, telling apart the two
// an operator acts on differently: a receiver that was never reached (no
// answer: connection refused, timeout, DNS, TLS; its error) and one that
// answered and refused the window (its status, and where a redirect it
// was not followed to pointed).
func (s *Sink) logFailure(key string, res result, attempt int32, retryIn time.Duration) {
	if res.err != nil {
		s.logger.Warn("billing endpoint unreachable; retrying", "key", key,
			"err", res.errText(), "attempt", attempt, "retry_in", retryIn)
		return
	}
	s.logger.Warn("billing endpoint refused a usage window; retrying", "key", key,
		"status", res.status, "err", res.errText(), "attempt", attempt, "retry_in", retryIn)
}

// undelivered counts the windows not known to be accepted.
func undelivered(windows []queries.UsageWindow, states map[string]db.BillingDeliveryStatesRow) int {
	n := 0
	for _, w := range windows {
		if st, ok := states[w.Key]; !ok || st.DeliveredAt == nil {
			n++
		}
	}
	return n
}

// delay is the wait after a window's (done+1)-th failed attempt: the
// schedule's, or a throttling receiver's Retry-After when later.
func (s *Sink) delay(done int, res result) time.Duration {
	d := s.cfg.Schedule[min(done, len(s.cfg.Schedule)-1)]
	if res.retryAfter > d {
		d = min(res.retryAfter, maxRetryAfter)
	}
	return d
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
