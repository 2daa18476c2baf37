package commands

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/workqueue"
)

// The pruning reconciler: one work-queue item that re-enqueues itself
// every Pruner.Every (docs/concepts/retention.md).
const (
	KindRetentionPrune = "retention.prune"
	RetentionPruneKey  = "all"
)

// Defaults of retention (COMPUTE_EVENT_RETENTION, COMPUTE_WORK_RETENTION,
// COMPUTE_WEBHOOK_ATTEMPT_RETENTION) and of the pruner.
const (
	DefaultEventRetention          = 30 * 24 * time.Hour
	DefaultWorkRetention           = 7 * 24 * time.Hour
	DefaultWebhookAttemptRetention = 7 * 24 * time.Hour
	// DefaultPruneEvery is how often the pruner runs (COMPUTE_PRUNE_EVERY).
	DefaultPruneEvery = 10 * time.Minute
	// DefaultPruneBatch bounds the rows one statement deletes, so that no
	// pruning transaction holds many row locks or runs for long.
	DefaultPruneBatch = 1000
	// DefaultPruneBatchesPerRun bounds the statements per table of one
	// run, so that a run stays well inside its shard lease; a run that
	// left rows behind asks to run again after pruneAgainSoon.
	DefaultPruneBatchesPerRun = 20
	pruneAgainSoon            = time.Second
	// AuthzChangesKept is how long the revocation feed (authz_changes)
	// keeps a change: far longer than any API process reads it behind
	// (seconds, while it reaches the database) or caches a token (30 s).
	AuthzChangesKept = 24 * time.Hour
)

// Retention says how long each kind of history is kept; zero keeps it
// forever. Expired idempotency keys need no setting: a key lives
// Config.IdempotencyTTL (COMPUTE_IDEMPOTENCY_TTL) and is purged once it
// has expired.
type Retention struct {
	// Events is how long outbox rows (the event log) are kept.
	Events time.Duration
	// Work is how long finished node jobs (node_commands), instances that
	// ended (stopped, failed, succeeded), finished webhook deliveries,
	// accepted billing windows and unused join tokens that expired or were
	// revoked are kept after they finished.
	Work time.Duration
	// WebhookAttempts is how long webhook_attempts rows are kept.
	WebhookAttempts time.Duration
}

// DefaultRetention is the retention of a default configuration.
func DefaultRetention() Retention {
	return Retention{Events: DefaultEventRetention, Work: DefaultWorkRetention,
		WebhookAttempts: DefaultWebhookAttemptRetention}
}

// deliveries is how long a finished webhook delivery is kept: deleting it
// deletes its attempts, so it stays as long as Work and WebhookAttempts
// both ask (forever if either does).
func (r Retention) deliveries() time.Duration {
	if r.Work <= 0 || r.WebhookAttempts <= 0 {
		return 0
	}
	return max(r.Work, r.WebhookAttempts)
}

// Pruner deletes history past its retention: events (never past the
// lowest sink cursor, nor an event with a webhook delivery pending),
// expired idempotency keys, finished node jobs (the node journal kept in
// PostgreSQL), instances that ended, finished webhook deliveries, webhook
// attempts, the record of accepted billing windows, the revocation
// feed's old changes, expired stream tickets, join tokens that can no
// longer be used and the fleet read model's rows of reservations that
// ended once their events are gone. It is the KindRetentionPrune reconciler.
type Pruner struct {
	Pool   *pgxpool.Pool
	Logger *slog.Logger
	// Retention per kind of history; zero fields keep it forever.
	Retention Retention
	// Every is how often the pruner runs; zero means DefaultPruneEvery.
	Every time.Duration
	// Batch bounds the rows of one statement; zero means
	// DefaultPruneBatch.
	Batch int
	// BatchesPerRun bounds the statements per table of one run; zero
	// means DefaultPruneBatchesPerRun.
	BatchesPerRun int
}

// PruneResult says what one run deleted, per table.
type PruneResult struct {
	Events, IdempotencyKeys, WebhookAttempts, WebhookDeliveries, NodeJobs, Instances, BillingDeliveries, AuthzChanges int64
	// StreamTickets are expired stream tickets; JoinTokens are node join
	// tokens never used that stopped being usable before the Work
	// retention.
	StreamTickets, JoinTokens int64
	// FleetAllocations are rows of the fleet read model
	// (rm_fleet_allocations) of reservations that ended, whose events
	// were all pruned.
	FleetAllocations int64
	// More is set when a table used its budget (BatchesPerRun) with rows
	// left to delete.
	More bool
}

// Total is how many rows the run deleted.
func (r PruneResult) Total() int64 {
	return r.Events + r.IdempotencyKeys + r.WebhookAttempts + r.WebhookDeliveries + r.NodeJobs + r.Instances +
		r.BillingDeliveries + r.AuthzChanges + r.StreamTickets + r.JoinTokens + r.FleetAllocations
}

func (p *Pruner) every() time.Duration { return orDefault(p.Every, DefaultPruneEvery) }

func (p *Pruner) batch() int { return orDefault(p.Batch, DefaultPruneBatch) }

func (p *Pruner) batchesPerRun() int { return orDefault(p.BatchesPerRun, DefaultPruneBatchesPerRun) }

func (p *Pruner) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}

// HandleRetentionPrune is the KindRetentionPrune work-queue handler: one
// run, each of its transactions fenced by the item's shard lease, then
// again after Every (or at once when the run left rows behind).
func (p *Pruner) HandleRetentionPrune(ctx context.Context, it workqueue.Item) error {
	res, err := p.Prune(ctx, func(tx pgx.Tx) error { return it.Lease.Fence(ctx, tx) })
	if err != nil {
		return err
	}
	if res.More {
		return workqueue.Again(pruneAgainSoon)
	}
	return workqueue.Again(p.every())
}

// EnsureRetentionPrune enqueues the pruner's item, due now. Workers call
// it at start, so each start runs the pruner once and the item exists
// even if it was lost; it re-enqueues itself from then on.
func (p *Pruner) EnsureRetentionPrune(ctx context.Context) error {
	return workqueue.Enqueue(ctx, db.New(p.Pool), KindRetentionPrune, RetentionPruneKey, 0)
}

// OverdueRows is one table's count of rows older than its retention, as
// `compute check` reports it.
type OverdueRows struct {
	Table string
	// Rule says which rows are overdue: "older than 720h0m0s",
	// "expired", or "kept forever" (never any).
	Rule string
	Rows int64
	// HeldBy names what keeps overdue events, when they are: the durable
	// sink furthest behind. Empty otherwise.
	HeldBy string
}

// Overdue counts, per table, the rows older than their retention that are
// still there: what the pruner has yet to delete, or is held back from.
func (p *Pruner) Overdue(ctx context.Context) ([]OverdueRows, error) {
	q := db.New(p.Pool)
	r := p.Retention
	row, err := q.RetentionOverdue(ctx, db.RetentionOverdueParams{EventSeconds: r.Events.Seconds(),
		AttemptSeconds: r.WebhookAttempts.Seconds(), DeliverySeconds: r.deliveries().Seconds(),
		WorkSeconds: r.Work.Seconds(), AuthzSeconds: AuthzChangesKept.Seconds()})
	if err != nil {
		return nil, fmt.Errorf("overdue rows: %w", err)
	}
	var jobs int64
	if r.Work > 0 {
		if jobs, err = q.RetentionNodeJobsOverdue(ctx, r.Work.Seconds()); err != nil {
			return nil, fmt.Errorf("overdue node jobs: %w", err)
		}
	}
	events := OverdueRows{Table: "outbox", Rule: olderThan(r.Events), Rows: row.Events}
	if events.Rows > 0 {
		sinks, err := q.RetentionSinkCursorLowest(ctx)
		if err != nil {
			return nil, fmt.Errorf("lowest sink cursor: %w", err)
		}
		if len(sinks) > 0 {
			events.HeldBy = fmt.Sprintf("sink %s (cursor saved %s)", sinks[0].Sink,
				sinks[0].UpdatedAt.UTC().Format(time.RFC3339))
		}
	}
	return []OverdueRows{
		events,
		{Table: "idempotency_keys", Rule: "expired", Rows: row.IdempotencyKeys},
		{Table: "webhook_attempts", Rule: olderThan(r.WebhookAttempts), Rows: row.WebhookAttempts},
		{Table: "webhook_deliveries", Rule: "finished, " + olderThan(r.deliveries()), Rows: row.WebhookDeliveries},
		{Table: "node_commands", Rule: "finished, " + olderThan(r.Work), Rows: jobs},
		{Table: "instances", Rule: "ended, " + olderThan(r.Work), Rows: row.Instances},
		{Table: "billing_deliveries", Rule: "accepted, " + olderThan(r.Work), Rows: row.BillingDeliveries},
		{Table: "authz_changes", Rule: olderThan(AuthzChangesKept), Rows: row.AuthzChanges},
		{Table: "stream_tickets", Rule: "expired", Rows: row.StreamTickets},
		{Table: "node_join_tokens", Rule: "unused, expired or revoked, " + olderThan(r.Work), Rows: row.JoinTokens},
		{Table: "rm_fleet_allocations", Rule: "ended, events pruned", Rows: row.FleetAllocations},
	}, nil
}

func olderThan(d time.Duration) string {
	if d <= 0 {
		return "kept forever"
	}
	return "older than " + d.String()
}
