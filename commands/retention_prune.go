package commands

import (
	"context"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// Prune runs the pruner once: each table in batches of at most Batch rows,
// each batch one short transaction whose first statement is fence (nil:
// unfenced, for tests and tools), until a batch comes back short or the
// table has had BatchesPerRun statements in this run. A fence that fails
// ends the run with its error (lease.ErrFenced): a worker that lost its
// shard deletes nothing more.
//
// Webhook history goes before events: a succeeded delivery is kept while
// its event is, so it leaves in the run after the one that pruned its
// event. Node jobs go before instances: an ended instance is kept while a
// job of it is, so it leaves in the same run as its last job. The fleet
// read model's rows of ended reservations go after the events, in the run
// that pruned the last event of theirs.
func (p *Pruner) Prune(ctx context.Context, fence func(pgx.Tx) error) (PruneResult, error) {
	var res PruneResult
	run := pruneRun{p: p, fence: fence}
	r := p.Retention
	limit := int32(p.batch())
	steps := []struct {
		table string
		keep  bool // retention is forever: nothing to do
		into  *int64
		stmt  func(q *db.Queries) (int64, error)
	}{
		{"webhook_attempts", r.WebhookAttempts <= 0, &res.WebhookAttempts, func(q *db.Queries) (int64, error) {
			return q.RetentionWebhookAttemptsPrune(ctx, db.RetentionWebhookAttemptsPruneParams{
				RetentionSeconds: r.WebhookAttempts.Seconds(), MaxRows: limit})
		}},
		{"webhook_deliveries", r.deliveries() <= 0, &res.WebhookDeliveries, func(q *db.Queries) (int64, error) {
			return q.RetentionWebhookDeliveriesPrune(ctx, db.RetentionWebhookDeliveriesPruneParams{
				RetentionSeconds: r.deliveries().Seconds(), MaxRows: limit})
		}},
		{"node_commands", r.Work <= 0, &res.NodeJobs, func(q *db.Queries) (int64, error) {
			return q.RetentionNodeJobsPrune(ctx, db.RetentionNodeJobsPruneParams{
				RetentionSeconds: r.Work.Seconds(), MaxRows: limit})
		}},
		// After node_commands: an instance goes once its node jobs have.
		{"instances", r.Work <= 0, &res.Instances, func(q *db.Queries) (int64, error) {
			return q.RetentionInstancesPrune(ctx, db.RetentionInstancesPruneParams{
				RetentionSeconds: r.Work.Seconds(), MaxRows: limit})
		}},
		{"billing_deliveries", r.Work <= 0, &res.BillingDeliveries, func(q *db.Queries) (int64, error) {
			return q.RetentionBillingDeliveriesPrune(ctx, db.RetentionBillingDeliveriesPruneParams{
				RetentionSeconds: r.Work.Seconds(), MaxRows: limit})
		}},
		{"authz_changes", false, &res.AuthzChanges, func(q *db.Queries) (int64, error) {
			return q.RetentionAuthzChangesPrune(ctx, db.RetentionAuthzChangesPruneParams{
				KeptSeconds: AuthzChangesKept.Seconds(), MaxRows: limit})
		}},
		{"idempotency_keys", false, &res.IdempotencyKeys, func(q *db.Queries) (int64, error) {
			return q.RetentionIdempotencyKeysPrune(ctx, limit)
		}},
		{"stream_tickets", false, &res.StreamTickets, func(q *db.Queries) (int64, error) {
			return q.RetentionStreamTicketsPrune(ctx, limit)
		}},
		{"node_join_tokens", r.Work <= 0, &res.JoinTokens, func(q *db.Queries) (int64, error) {
			return q.RetentionJoinTokensPrune(ctx, db.RetentionJoinTokensPruneParams{
				RetentionSeconds: r.Work.Seconds(), MaxRows: limit})
		}},
	}
	for _, s := range steps {
		if s.keep {
			continue
		}
		if err := run.table(ctx, s.into, s.stmt); err != nil {
			return res, fmt.Errorf("prune %s: %w", s.table, err)
		}
	}
	if r.Events > 0 {
		if err := p.pruneEvents(ctx, &run, &res.Events, limit); err != nil {
			return res, fmt.Errorf("prune outbox: %w", err)
		}
	}
	// After the events: a row of an ended reservation goes once its
	// events have.
	if r.Events > 0 {
		if err := run.table(ctx, &res.FleetAllocations, func(q *db.Queries) (int64, error) {
			return q.RetentionFleetAllocationsPrune(ctx, limit)
		}); err != nil {
			return res, fmt.Errorf("prune rm_fleet_allocations: %w", err)
		}
	}
	res.More = run.more
	if n := res.Total(); n > 0 {
		p.logger().Info("retention: pruned", "events", res.Events, "idempotency_keys", res.IdempotencyKeys,
			"webhook_attempts", res.WebhookAttempts, "webhook_deliveries", res.WebhookDeliveries,
			"node_jobs", res.NodeJobs, "instances", res.Instances, "billing_deliveries", res.BillingDeliveries, "authz_changes", res.AuthzChanges,
			"stream_tickets", res.StreamTickets, "join_tokens", res.JoinTokens,
			"fleet_allocations", res.FleetAllocations, "more", res.More)
	}
	return res, nil
}

// pruneEvents deletes the log's prefix that is past retention, below the
// bound every reader allows: the newest visible event is kept (so a
// caught-up cursor never expires) and no durable sink's cursor is passed.
// The bound is read once: both of its parts only ever move forward, so a
// stale bound is merely cautious.
func (p *Pruner) pruneEvents(ctx context.Context, run *pruneRun, into *int64, limit int32) error {
	q := db.New(p.Pool)
	heads, err := q.OutboxHeadPosition(ctx)
	if err != nil {
		return fmt.Errorf("newest event: %w", err)
	}
	if len(heads) == 0 {
		return nil // nothing visible, nothing to prune
	}
	below := outbox.Position{TxID: heads[0].Txid, Seq: heads[0].Seq}
	sinks, err := q.RetentionSinkCursorLowest(ctx)
	if err != nil {
		return fmt.Errorf("lowest sink cursor: %w", err)
	}
	if len(sinks) > 0 && sinks[0].Seq < math.MaxInt64 {
		// Everything up to and including the cursor was delivered: the
		// bound is the position right after it.
		if after := (outbox.Position{TxID: sinks[0].Txid, Seq: sinks[0].Seq + 1}); after.Less(below) {
			below = after
		}
	}
	return run.table(ctx, into, func(q *db.Queries) (int64, error) {
		// After every recover in flight (see RetentionOutboxPruneLock).
		if err := q.RetentionOutboxPruneLock(ctx); err != nil {
			return 0, err
		}
		n, err := q.RetentionOutboxPrune(ctx, db.RetentionOutboxPruneParams{
			RetentionSeconds: p.Retention.Events.Seconds(), BelowTxid: below.TxID, BelowSeq: below.Seq, MaxRows: limit})
		if err != nil || n == 0 {
			return n, err
		}
		// compute check tells a pruned aggregate's missing first events
		// from lost ones by this (InvariantEventVersions).
		return n, q.RetentionOutboxPrunedRecord(ctx)
	})
}

// pruneRun is one run's fence, and whether a table was left unfinished.
type pruneRun struct {
	p     *Pruner
	fence func(pgx.Tx) error
	more  bool // a table used its budget with a full last batch
}

// table runs stmt in fenced transactions until it deletes less than a
// full batch or BatchesPerRun statements ran, adding what it deleted to
// into.
func (r *pruneRun) table(ctx context.Context, into *int64, stmt func(q *db.Queries) (int64, error)) error {
	full := int64(r.p.batch())
	for budget := r.p.batchesPerRun(); ; budget-- {
		if budget == 0 {
			r.more = true
			return nil
		}
		var n int64
		err := pg.InTx(ctx, r.p.Pool, func(tx pgx.Tx) error {
			if r.fence != nil {
				if err := r.fence(tx); err != nil {
					return err
				}
			}
			var err error
			n, err = stmt(db.New(tx))
			return err
		})
		if err != nil {
			return err
		}
		*into += n
		if n < full {
			return nil
		}
	}
}
