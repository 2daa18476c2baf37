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

// Backlog is what the API's command admission reads (SinkBacklog).
type Backlog struct {
	// Head is the last visible event of the log (zero when none is).
	Head outbox.Position
	// Slowest is the cursor of the slowest of the sinks asked about that
	// saved its cursor lately; HasSlowest is false when none did.
	Slowest    outbox.Position
	HasSlowest bool
	// DeliveryWait is how long the oldest due webhook delivery has waited
	// for a worker, while a worker runs one and no attempt is slow; else 0.
	DeliveryWait time.Duration
}

// BacklogQuery says what SinkBacklog reads.
type BacklogQuery struct {
	// Sinks are the sinks to follow; one whose cursor has not moved
	// within Active is left out (stopped, or idle).
	Sinks  []string
	Active time.Duration
	// DeliveryKind is the work kind of webhook deliveries; SlotHold is how
	// long after its start an attempt's in-flight slot lapses (webhook.
	// Config.SlotHold); while an attempt has been in flight longer than
	// SlowAttempt, the deliveries' wait is not counted.
	DeliveryKind          string
	SlotHold, SlowAttempt time.Duration
}

// SinkBacklog reads the Backlog for the API's command admission
// (httpapi.CommandAdmission, outbox.HandlingLag).
func (s *Service) SinkBacklog(ctx context.Context, bq BacklogQuery) (Backlog, error) {
	row, err := s.q().OutboxSinkBacklog(ctx, db.OutboxSinkBacklogParams{Sinks: bq.Sinks, ActiveSeconds: bq.Active.Seconds(),
		WorkKind: bq.DeliveryKind, HoldSeconds: bq.SlotHold.Seconds(), SlowStartedSeconds: bq.SlowAttempt.Seconds()})
	if err != nil {
		return Backlog{}, pg.Translate(err, "sinks' backlog")
	}
	return Backlog{
		Head:         outbox.Position{TxID: row.HeadTxid, Seq: row.HeadSeq},
		Slowest:      outbox.Position{TxID: row.SlowestTxid, Seq: row.SlowestSeq},
		HasSlowest:   row.HasSlowest,
		DeliveryWait: time.Duration(row.DeliveryWaitSeconds * float64(time.Second)),
	}, nil
}
