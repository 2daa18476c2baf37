// Package commands is the write side: one handler per command, each one
// transaction that takes locks in the global order (quota_usage, sites,
// pools, nodes, devices, node_resources, pool_capacity_rollup, node_desired),
// checks the transition in core's state tables, writes with version guards,
// appends its events to the outbox and enqueues work — all or nothing.
package commands

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// Defaults of the tunable fields of Handlers.
const (
	DefaultIdempotencyTTL       = 24 * time.Hour
	DefaultPendingRetryInterval = 30 * time.Second
	DefaultPlacementAttempts    = 3
	// DefaultPlacementSample is how many nodes of a larger pool the
	// placer scores first (as Kubernetes' scheduler scores a share of
	// the feasible nodes): counting free atoms is the placer's cost, and
	// it grew linearly with the pool (264 ms for a site-wide request
	// over 10,000 nodes). When none of them fits, it scores them all.
	DefaultPlacementSample = 64
	// DefaultMinReservationLength is the shortest window a reservation
	// may ask for unless configured otherwise: 1 minute
	// (reservation_length.go says why).
	DefaultMinReservationLength = time.Minute
	// DefaultMaxReservationLength is the longest window a reservation
	// may have unless configured otherwise: 90 days.
	DefaultMaxReservationLength = 90 * 24 * time.Hour
	// DefaultMaxBookingHorizon is how far ahead a reservation may start
	// unless configured otherwise: 366 days.
	DefaultMaxBookingHorizon = 366 * 24 * time.Hour
)

// Work-queue kinds the capacity core enqueues. Their reconcilers are
// Reconcilers.ReservationPlace, ReservationQueue, ReservationActivate and
// ReservationExpire. KindReservationQueue is keyed by scope
// (PendingQueueKey): one item per pool or site with pending reservations,
// which tries them in fair-share order (pending_queue.go).
// KindReservationPlace, one item per pending reservation, is what came
// before it: items of it still queued only wake their scope's queue.
const (
	KindReservationPlace    = "reservation.place"
	KindReservationQueue    = "reservation.queue"
	KindReservationActivate = "reservation.activate"
	KindReservationExpire   = "reservation.expire"
)

// TestConfig are the settings of Config for tests, benchmarks and the
// torture run, apart from the production ones (river's Config.Test).
type TestConfig struct {
	// ReplanCapReached, when set, is called each time a placement stops
	// replanning because it lost PlacementAttempts races in a row, so that
	// a torture run can show the cap was reached, not just configured.
	ReplanCapReached func()
	// NodesWithoutDaemons leaves nodes that are registered but never join
	// out of liveness: they stay schedulable instead of becoming
	// unreachable NoSessionAfter after their registration. For fleets
	// without daemons (benchmarks, fault tests), never in production. A
	// node that joins is judged as always.
	NodesWithoutDaemons bool
}

// Config is how Handlers run. Every zero field means its default, the
// Default* constant named on it; NodeCredentialGrace alone gives a negative
// value a meaning of its own.
type Config struct {
	// Logger receives what the commands and reconcilers log (nil:
	// slog.Default()).
	Logger *slog.Logger
	// IdempotencyTTL is how long a stored response is replayed
	// (DefaultIdempotencyTTL).
	IdempotencyTTL time.Duration
	// PendingRetryInterval is how often a pending reservation is retried
	// (DefaultPendingRetryInterval): how often the queue of a pool or site
	// with pending reservations runs.
	PendingRetryInterval time.Duration
	// FairShareHalfLife is the half-life of the usage the waiting line is
	// ordered by (core.DefaultFairShareHalfLife; docs/concepts/fair-share.md).
	FairShareHalfLife time.Duration
	// PlacementAttempts bounds the savepoint attempts of one placement
	// (DefaultPlacementAttempts).
	PlacementAttempts int
	// PlacementSample is how many nodes the placer scores first
	// (DefaultPlacementSample).
	PlacementSample int
	// NodeCredentialGrace is how long a node's earlier credentials keep
	// authenticating after it re-joins (DefaultNodeCredentialGrace).
	// Negative means none: they are revoked at the re-join.
	NodeCredentialGrace time.Duration
	// NodeResyncEvery is how often each node's assignments are resynced,
	// KindNodeResync (DefaultNodeResyncEvery).
	NodeResyncEvery time.Duration
	// MaxOpenNodeJobs is how many commands.run jobs (exec, wipe, deploy)
	// one tenant may have open (queued, sent or running) on one node;
	// commands.run refuses one more with CONFLICT
	// (DefaultMaxOpenNodeJobs).
	MaxOpenNodeJobs int
	// PendingQueueBatch is how many reservations one run of a waiting
	// line tries (DefaultPendingQueueBatch).
	PendingQueueBatch int
	// MaxPendingReservations is how many pending reservations one tenant
	// may have; a create that would end pending past it is QUOTA_EXCEEDED
	// (DefaultMaxPendingReservations).
	MaxPendingReservations int
	// MinReservationLength is the shortest window a reservation may ask
	// for, from its start to its end as sent (DefaultMinReservationLength;
	// at most the maximum): a shorter create is INVALID_ARGUMENT.
	MinReservationLength time.Duration
	// MaxReservationLength is the longest window a reservation may have,
	// from when it is booked (DefaultMaxReservationLength; at most
	// MaxReservationLengthCeiling): a longer create or extension is
	// INVALID_ARGUMENT.
	MaxReservationLength time.Duration
	// MaxBookingHorizon is how far ahead of now a reservation may start
	// (DefaultMaxBookingHorizon): a create that starts later is
	// INVALID_ARGUMENT.
	MaxBookingHorizon time.Duration
	// MaxTokenTTL, when positive, is the longest lifetime of a token that
	// a token issues (Tokens.MaxTTL): one asked for without an expiry, or
	// a later one, is TOKEN_LIFETIME_EXCEEDED. 0: no maximum.
	MaxTokenTTL time.Duration
	// PlacementRejected, when set, is told the filter of every node the
	// placer turns down (placement.Filter), for a metric.
	PlacementRejected func(filter string)
	// Test holds what only tests, benchmarks and the torture run set.
	Test TestConfig
}

// Handlers runs the commands against one database: capacity, nodes and
// their sessions and liveness, node jobs and instances. Build it with New;
// main builds one and hands it to the HTTP API, the gateway and the webhook
// service.
type Handlers struct {
	// Pool is the database the commands run against.
	Pool *pgxpool.Pool
	cfg  Config
}

// New returns the Handlers that run against pool with cfg.
func New(pool *pgxpool.Pool, cfg Config) *Handlers {
	return &Handlers{Pool: pool, cfg: cfg}
}

// DefaultMaxOpenNodeJobs is the default of Config.MaxOpenNodeJobs.
const DefaultMaxOpenNodeJobs = 64

func (h *Handlers) maxOpenNodeJobs() int {
	return orDefault(h.cfg.MaxOpenNodeJobs, DefaultMaxOpenNodeJobs)
}

// DefaultMaxPendingReservations is the default of
// Config.MaxPendingReservations.
const DefaultMaxPendingReservations = 1000

func (h *Handlers) maxPendingReservations() int {
	return orDefault(h.cfg.MaxPendingReservations, DefaultMaxPendingReservations)
}

// orDefault is a setting's value when it is set (positive), else its
// default: the zero value of every Config and Pruner setting means "the
// default".
func orDefault[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

func (h *Handlers) pendingQueueBatch() int {
	return orDefault(h.cfg.PendingQueueBatch, DefaultPendingQueueBatch)
}

func (h *Handlers) idempotencyTTL() time.Duration {
	return orDefault(h.cfg.IdempotencyTTL, DefaultIdempotencyTTL)
}

func (h *Handlers) pendingRetry() time.Duration {
	return orDefault(h.cfg.PendingRetryInterval, DefaultPendingRetryInterval)
}

func (h *Handlers) fairShareHalfLife() time.Duration {
	return orDefault(h.cfg.FairShareHalfLife, core.DefaultFairShareHalfLife)
}

func (h *Handlers) placementSample() int {
	return orDefault(h.cfg.PlacementSample, DefaultPlacementSample)
}

func (h *Handlers) placementAttempts() int {
	return orDefault(h.cfg.PlacementAttempts, DefaultPlacementAttempts)
}

func (h *Handlers) logger() *slog.Logger {
	if h.cfg.Logger != nil {
		return h.cfg.Logger
	}
	return slog.Default()
}

// requireOperator refuses fleet commands to anyone but an operator.
func requireOperator(actor core.Actor, what string) error {
	if !actor.IsOperator() {
		return core.Errorf(core.CodePermissionDenied, "%s requires the operator role", what)
	}
	return nil
}

// emit appends one event for a committed transition. data must carry the
// aggregate's new "version": the invariant checker counts on it.
func emit(ctx context.Context, q *db.Queries, typ, tenant, subject string, data any) (outbox.Position, error) {
	ev, err := core.NewEvent(typ, tenant, subject, data)
	if err != nil {
		return outbox.Position{}, err
	}
	return outbox.Append(ctx, q, ev)
}

// emitIn is emit queued in b; *pos receives the event's position once b is
// sent (pos may be nil).
func emitIn(ctx context.Context, b *pg.Batch, typ, tenant, subject string, data any, pos *outbox.Position) error {
	ev, err := core.NewEvent(typ, tenant, subject, data)
	if err != nil {
		return err
	}
	if pos == nil {
		pos = new(outbox.Position)
	}
	outbox.AppendIn(ctx, b, ev, pos)
	return nil
}

// zeroRowsConflict is the one mapping of a guarded update that touched no
// row: someone else changed the record first.
func zeroRowsConflict(n int64, err error, what string) error {
	if err != nil {
		return pg.Translate(err, what)
	}
	if n == 0 {
		return core.Wrap(core.CodeConflict, errChangedConcurrently, what+" was changed concurrently; read it again and retry")
	}
	return nil
}

// errChangedConcurrently is the cause of a version guard that matched no
// row: another transaction changed the record between read and write.
var errChangedConcurrently = errors.New("version guard matched no row")

// unversionedAttempts is how often a command the caller did not pin to a
// version (no If-Match) is run again after losing a version race.
const unversionedAttempts = 3

// retryUnversioned runs fn again when it lost a version race and the caller
// gave no If-Match: a release that meets the activation reconciler, say,
// must not fail for it — the caller asked for the change whatever the
// version. With If-Match the conflict is the answer.
func retryUnversioned(ifVersion int64, fn func() error) error {
	err := fn()
	for i := 1; i < unversionedAttempts && ifVersion == 0 && errors.Is(err, errChangedConcurrently); i++ {
		err = fn()
	}
	return err
}

// checkVersion implements If-Match: 0 means no check.
func checkVersion(ifVersion, current int64, what string) error {
	if ifVersion != 0 && ifVersion != current {
		return core.Errorf(core.CodeConflict, "%s is at version %d, not %d", what, current, ifVersion)
	}
	return nil
}

// Tokens are the API tokens of h's database, for the identity routes.
func (h *Handlers) Tokens() *Tokens { return &Tokens{Pool: h.Pool, MaxTTL: h.cfg.MaxTokenTTL} }

// StreamTickets are the event-stream tickets of h's database, for the
// route that issues them and the check that redeems them.
func (h *Handlers) StreamTickets() *StreamTickets { return &StreamTickets{Pool: h.Pool} }
