package queries

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/internal/db"
)

// DefaultReplicaMaxLag is how far behind the primary a read replica may
// fall and still serve reads (COMPUTE_READ_MAX_LAG).
const DefaultReplicaMaxLag = 5 * time.Second

// DefaultReplicaCheckEvery is how often a replica's lag is measured.
const DefaultReplicaCheckEvery = time.Second

// replicaCheckTimeout is how long a check waits for its answers: the
// standby's are trivial statements, so one that has not answered in 5 s
// hangs. It is not MaxLag, which may be set far lower (a check on a busy
// machine that took longer than a small MaxLag would take a standby that
// keeps up out of rotation) or far higher.
const replicaCheckTimeout = 5 * time.Second

// Replica is a hot standby (a PostgreSQL streaming replica) that serves
// the read-model queries while it keeps up with the primary, so that reads
// add no load there. Its lag is measured, not assumed: every check samples
// the primary's WAL position with the time, and the standby's replayed
// position then tells the time of the newest sample it has replayed; the
// lag is how long ago the primary wrote what the standby has not replayed
// yet (0 when it has replayed everything sampled). A standby further
// behind than MaxLag, or that cannot be read, or that is not a standby, or
// that holds events the primary does not have (checkHistory), is
// taken out of rotation (reads go to the primary) until it is back within
// half of MaxLag, with a log line each way.
//
// Out of rotation is also where it starts: reads go to the standby only
// after a check found it within MaxLag.
type Replica struct {
	Pool    *pgxpool.Pool // the standby
	Primary *pgxpool.Pool
	// MaxLag is the bound (default DefaultReplicaMaxLag).
	MaxLag time.Duration
	Logger *slog.Logger
	// Observe, when set, is told every check's outcome (metrics).
	Observe func(lag time.Duration, inRotation bool)

	inRotation atomic.Bool
	lag        atomic.Int64 // nanoseconds, as of the last check
	// failing is set while checks fail: the first failure is logged even
	// when the standby was out of rotation already.
	failing atomic.Bool

	mu      sync.Mutex
	samples []walSample // oldest first, none older than keepSamples
}

// maxSamples bounds the samples kept while the standby is far behind.
const maxSamples = 1024

// walSample is the primary's WAL position at a time.
type walSample struct {
	at       time.Time
	position int64
}

// InRotation says whether reads may go to the standby now.
func (r *Replica) InRotation() bool { return r.inRotation.Load() }

// Lag is the lag the last check measured.
func (r *Replica) Lag() time.Duration { return time.Duration(r.lag.Load()) }

func (r *Replica) maxLag() time.Duration {
	if r.MaxLag > 0 {
		return r.MaxLag
	}
	return DefaultReplicaMaxLag
}

// Run checks the standby every interval (DefaultReplicaCheckEvery when 0)
// until ctx ends.
func (r *Replica) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = DefaultReplicaCheckEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		_, _ = r.Check(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Check measures the lag at now (the time of this check's reading of the
// primary) and puts the standby in or out of rotation by it. It returns
// the lag, or why the standby could not be measured (it is then out). A
// check that gets no answer within replicaCheckTimeout fails: a standby
// that hangs (a frozen machine, a stalled disk) would otherwise hold the
// check, and the standby in rotation, for as long as it hangs.
func (r *Replica) Check(ctx context.Context, now time.Time) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, replicaCheckTimeout)
	defer cancel()
	lag, err := r.measure(ctx, now)
	if err != nil {
		r.rotate(false, 0, err)
		return 0, err
	}
	r.lag.Store(int64(lag))
	in := r.InRotation()
	switch {
	case lag > r.maxLag():
		in = false
	case lag <= r.maxLag()/2:
		in = true
	}
	r.rotate(in, lag, nil)
	return lag, nil
}

// measure samples the primary, then reads the standby's replay position,
// once it has checked that the standby copies the primary's history.
func (r *Replica) measure(ctx context.Context, now time.Time) (time.Duration, error) {
	position, err := db.New(r.Primary).ReplicaPrimaryWALPosition(ctx)
	if err != nil {
		return 0, fmt.Errorf("primary WAL position: %w", err)
	}
	replay, err := db.New(r.Pool).ReplicaReplayPosition(ctx)
	if err != nil {
		return 0, fmt.Errorf("standby replay position: %w", err)
	}
	if !replay.Standby {
		return 0, errors.New("the read database is not a standby (not in recovery)")
	}
	if err := r.checkHistory(ctx); err != nil {
		return 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, walSample{at: now, position: position})
	keep := 2 * r.maxLag()
	for len(r.samples) > 1 && now.Sub(r.samples[0].at) > keep && r.samples[1].position <= replay.Position {
		r.samples = r.samples[1:] // replayed, and older than anything the bound needs
	}
	if len(r.samples) > maxSamples { // far behind: the lag is past the bound anyway
		r.samples = r.samples[len(r.samples)-maxSamples:]
	}
	for _, s := range r.samples {
		if s.position > replay.Position { // the oldest write not replayed yet
			return max(now.Sub(s.at), 0), nil
		}
	}
	return 0, nil
}

// lost takes the standby out of rotation after a read found it gone (its
// connection failed): the reads after it go to the primary until the next
// check finds it back.
func (r *Replica) lost(err error) {
	if r.InRotation() {
		r.rotate(false, r.Lag(), err)
	}
}

// rotate records the outcome and logs a change of rotation, and the
// first of a run of failed checks: a standby that cannot be read from the
// start (a wrong COMPUTE_READ_DATABASE_URL, a server down, a database that
// is not a standby) never changes rotation, and would otherwise never be
// mentioned.
func (r *Replica) rotate(in bool, lag time.Duration, err error) {
	was := r.inRotation.Swap(in)
	wasFailing := r.failing.Swap(err != nil)
	logger := r.Logger
	if logger == nil {
		logger = slog.Default()
	}
	switch {
	case was && !in:
		logger.Warn("read replica out of rotation: reads go to the primary", "lag", lag, "max_lag", r.maxLag(), "err", err)
	case !was && in:
		logger.Info("read replica in rotation", "lag", lag)
	case err != nil && !wasFailing:
		logger.Warn("read replica out of rotation: reads go to the primary", "lag", lag, "max_lag", r.maxLag(), "err", err)
	}
	if r.Observe != nil {
		r.Observe(lag, in)
	}
}
