package queries

import (
	"context"
	"time"

	"github.com/bettercompute/compute/internal/db"
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

// Backlog is how far behind the working sinks are (SinkBacklog).
type Backlog struct {
	// SinkLag is the age of the oldest event a sink that saved its
	// cursor lately has yet to handle. It includes the wait for the
	// outbox frontier: an event is visible only once every transaction
	// that began before it ended.
	SinkLag time.Duration
	// DeliveryWait is the age of the oldest due work item of the kind
	// asked for (the webhook deliveries) that no worker has claimed,
	// while a worker runs one: pure queueing.
	DeliveryWait time.Duration
}

// SinkBacklog reads the Backlog, in business time, for the API's command
// admission (httpapi.CommandAdmission): sinks whose cursor has not moved
// within active, and work kinds no worker runs, are left out.
func (s *Service) SinkBacklog(ctx context.Context, workKind string, active time.Duration) (Backlog, error) {
	row, err := s.q().OutboxSinkBacklog(ctx, db.OutboxSinkBacklogParams{WorkKind: workKind, ActiveSeconds: active.Seconds()})
	if err != nil {
		return Backlog{}, pg.Translate(err, "sinks' backlog")
	}
	return Backlog{SinkLag: seconds(row.SinkLagSeconds), DeliveryWait: seconds(row.DeliveryWaitSeconds)}, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
