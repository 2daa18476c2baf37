package queries

import (
	"context"
	"time"

	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// ClockNow reads compute_now(), the business time every statement judges
// by. It makes a Service an internal/clock Source, so a process anchors its
// clock, and /readyz measures its skew, without touching the generated
// queries.
func (s *Service) ClockNow(ctx context.Context) (time.Time, error) {
	now, err := s.q().ClockNow(ctx)
	if err != nil {
		return time.Time{}, pg.Translate(err, "compute_now()")
	}
	return now, nil
}

// FrontierLag measures how far the oldest running transaction holds the
// outbox frontier back, for /readyz (see outbox.ReadFrontierLag; now is the
// real wall clock, not business time).
func (s *Service) FrontierLag(ctx context.Context, now func() time.Time) (outbox.FrontierLag, error) {
	lag, err := outbox.ReadFrontierLag(ctx, s.q(), now)
	if err != nil {
		return outbox.FrontierLag{}, pg.Translate(err, "outbox frontier lag")
	}
	return lag, nil
}

// SinkLag is how far an outbox sink is behind the log, for /readyz (see
// outbox.ReadSinkLag; now is business time, clock.Clock's Now).
func (s *Service) SinkLag(ctx context.Context, sinkID string, now time.Time) (time.Duration, error) {
	lag, err := outbox.ReadSinkLag(ctx, s.q(), sinkID, now)
	if err != nil {
		return 0, pg.Translate(err, "lag of sink "+sinkID)
	}
	return lag, nil
}
