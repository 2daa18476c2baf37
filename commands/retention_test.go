package commands_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/invariants"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
)

const day = 24 * time.Hour

// testRetention gives each table a retention of its own, so a table
// pruned by another's clock shows: deliveries go after max(Work,
// WebhookAttempts) = 7 days.
var testRetention = commands.Retention{Events: 30 * day, Work: 7 * day, WebhookAttempts: 3 * day}

// retentionFixture is the command fixture with a pruner and two webhook
// endpoints of acme's, we_1 and we_2.
type retentionFixture struct {
	*fixture
	p *commands.Pruner
}

func setupRetention(t *testing.T) *retentionFixture {
	t.Helper()
	f := &retentionFixture{fixture: setup(t)}
	f.p = &commands.Pruner{Pool: f.d.Pool, Retention: testRetention}
	_, err := f.d.Pool.Exec(f.ctx, `INSERT INTO webhook_endpoints (id, tenant_id, url, secret)
		VALUES ('we_1', 'acme', 'https://hooks.example.com/1', 'whsec_test'),
		       ('we_2', 'acme', 'https://hooks.example.com/2', 'whsec_test')`)
	require.NoError(t, err)
	return f
}

func (f *retentionFixture) prune(t *testing.T) commands.PruneResult {
	t.Helper()
	res, err := f.p.Prune(f.ctx, nil)
	require.NoError(t, err)
	return res
}

// event appends one event of acme's now and returns it, once readers can
// see it: the pruner keeps the newest visible event, and the frontier is
// cluster-wide (other tests' transactions hold it back for a moment).
func (f *retentionFixture) event(t *testing.T) outbox.Stored {
	t.Helper()
	e, err := core.NewEvent("test.happened", "acme", "subject", map[string]int{"version": 1})
	require.NoError(t, err)
	var p outbox.Position
	require.NoError(t, pgx.BeginFunc(f.ctx, f.d.Pool, func(tx pgx.Tx) error {
		p, err = outbox.Append(f.ctx, db.New(tx), e)
		return err
	}))
	require.Eventually(t, func() bool {
		head, err := f.d.Q.OutboxHeadPosition(f.ctx)
		require.NoError(t, err)
		return len(head) == 1 && !(outbox.Position{TxID: head[0].Txid, Seq: head[0].Seq}).Less(p)
	}, 20*time.Second, 5*time.Millisecond, "event %s visible", p)
	return outbox.Stored{Event: e, Position: p}
}

// billingDelivery records the billing sink's delivery of window key,
// accepted now or refused (retried later).
func (f *retentionFixture) billingDelivery(t *testing.T, key string, accepted bool) {
	t.Helper()
	_, err := f.d.Pool.Exec(f.ctx, `INSERT INTO billing_deliveries (key, allocation_id, tenant_id, window_start,
		attempts, last_status, next_attempt_at, delivered_at, updated_at)
		VALUES ($1, 'a1', 'acme', compute_now(), 1, CASE WHEN $2 THEN 200 ELSE 500 END, compute_now(),
		        CASE WHEN $2 THEN compute_now() END, compute_now())`, key, accepted)
	require.NoError(t, err)
}

// delivery records a delivery of event to endpoint in state, changed now.
func (f *retentionFixture) delivery(t *testing.T, endpoint string, event uuid.UUID, state string) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `INSERT INTO webhook_deliveries (endpoint_id, event_id, state)
		VALUES ($1, $2, $3) RETURNING id`, endpoint, event, state).Scan(&id))
	return id
}

// attempt records an attempt of delivery now and returns its id.
func (f *retentionFixture) attempt(t *testing.T, delivery uuid.UUID) int64 {
	t.Helper()
	var id int64
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `INSERT INTO webhook_attempts
		(delivery_id, endpoint_id, event_id, attempt, status, latency_ms)
		SELECT id, endpoint_id, event_id, 1, 500, 10 FROM webhook_deliveries WHERE id = $1
		RETURNING id`, delivery).Scan(&id))
	return id
}

// idempotencyKey stores a key of acme's expiring after ttl.
func (f *retentionFixture) idempotencyKey(t *testing.T, key string, ttl time.Duration) {
	t.Helper()
	_, err := f.d.Pool.Exec(f.ctx, `INSERT INTO idempotency_keys (tenant_id, identity, key, request_hash, expires_at)
		VALUES ('acme', 'bob@acme', $1, '\x00', compute_now() + make_interval(secs => $2))`, key, ttl.Seconds())
	require.NoError(t, err)
}

// execJob records an exec job on n1 that finished now.
func (f *retentionFixture) execJob(t *testing.T, id string) {
	t.Helper()
	_, err := f.d.Pool.Exec(f.ctx, `INSERT INTO node_commands (id, tenant_id, identity, node_id, idempotency_key,
		kind, retry_safe, state, finished_at) VALUES ($1, 'acme', 'bob@acme', 'n1', $1, 'exec', false, 'succeeded',
		compute_now())`, id)
	require.NoError(t, err)
}

// ackAssignments marks every open assign and unassign job succeeded now,
// as the daemon would.
func (f *retentionFixture) ackAssignments(t *testing.T) {
	t.Helper()
	_, err := f.d.Pool.Exec(f.ctx, `UPDATE node_commands SET state = 'succeeded', finished_at = compute_now()
		WHERE kind IN ('assign', 'unassign') AND state IN ('queued', 'sent', 'running')`)
	require.NoError(t, err)
}

// present returns which of the ids are rows of table (column id).
func (f *retentionFixture) present(t *testing.T, table string, ids ...any) []any {
	t.Helper()
	var out []any
	for _, id := range ids {
		var n int
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM "+table+" WHERE id = $1", id).Scan(&n))
		if n > 0 {
			out = append(out, id)
		}
	}
	return out
}

func (f *retentionFixture) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, query, args...).Scan(&n))
	return n
}

// Every table is pruned by its own retention and not a moment earlier:
// idempotency keys when they expire, attempts after 3 days, finished
// deliveries, node jobs and accepted billing windows after 7 (a succeeded
// delivery not before its event, a refused window never), events after 30. A live allocation's node jobs stay whatever
// their age; a released one's go together.
func TestRetentionPrunesEachTableOnlyPastItsRetention(t *testing.T) {
	t.Parallel()
	f := setupRetention(t)
	f.node(t, "n1", exclusive, exclusive)
	released := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	start, end := window(0, 40*24)
	live := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end})
	f.ackAssignments(t)
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: released.Reservation.ID})
	require.NoError(t, err)
	f.ackAssignments(t)
	releasedAlloc, liveAlloc := f.allocationOf(t, released.Reservation.ID), f.allocationOf(t, live.Reservation.ID)
	jobsOf := func(alloc string) int {
		return f.count(t, "SELECT count(*) FROM node_commands WHERE allocation_id = $1", alloc)
	}
	require.Equal(t, 2, jobsOf(releasedAlloc), "an assign and an unassign")
	require.Equal(t, 1, jobsOf(liveAlloc))

	old := f.event(t)
	succeeded, failed := f.delivery(t, "we_1", old.ID, "succeeded"), f.delivery(t, "we_2", old.ID, "failed")
	oldAttempt := f.attempt(t, failed)
	f.execJob(t, "cmd_old")
	f.idempotencyKey(t, "one-day", day)
	f.idempotencyKey(t, "three-days", 3*day)
	f.billingDelivery(t, "cmp:a1:accepted", true)
	f.billingDelivery(t, "cmp:a1:refused", false)

	f.d.AdvanceSimClock(t, 2*day)
	f.execJob(t, "cmd_new")
	require.Equal(t, commands.PruneResult{IdempotencyKeys: 1}, f.prune(t), "day 2: only the key that expired")
	require.Equal(t, 1, f.count(t, "SELECT count(*) FROM idempotency_keys WHERE key = 'three-days'"))

	f.d.AdvanceSimClock(t, 2*day) // day 4
	require.Equal(t, commands.PruneResult{IdempotencyKeys: 1, WebhookAttempts: 1}, f.prune(t))
	newAttempt := f.attempt(t, succeeded)
	require.Equal(t, []any{newAttempt}, f.present(t, "webhook_attempts", oldAttempt, newAttempt))

	f.d.AdvanceSimClock(t, 3*day-time.Second) // a second before day 7
	require.Zero(t, f.prune(t).Total(), "nothing is due a second early")

	f.d.AdvanceSimClock(t, 2*time.Second)
	require.Equal(t, commands.PruneResult{WebhookAttempts: 1, WebhookDeliveries: 1, NodeJobs: 3, BillingDeliveries: 1}, f.prune(t))
	require.Equal(t, 1, f.count(t, "SELECT count(*) FROM billing_deliveries WHERE key = 'cmp:a1:refused'"),
		"a billing window not yet accepted keeps its retry schedule")
	require.Equal(t, []any{succeeded}, f.present(t, "webhook_deliveries", succeeded, failed),
		"the failed delivery went; the succeeded one waits for its event")
	require.Equal(t, []any{"cmd_new"}, f.present(t, "node_commands", "cmd_old", "cmd_new"))
	require.Zero(t, jobsOf(releasedAlloc), "a released allocation's jobs go together")
	require.Equal(t, 1, jobsOf(liveAlloc), "a live allocation's jobs stay")

	f.d.AdvanceSimClock(t, 23*day) // day 30 and a second
	newest := f.event(t)
	res := f.prune(t)
	require.Positive(t, res.Events)
	require.Equal(t, 1, f.count(t, "SELECT count(*) FROM outbox"), "every event but today's")
	require.Equal(t, 1, f.count(t, "SELECT count(*) FROM outbox WHERE id = $1", newest.ID))
	require.Equal(t, []any{succeeded}, f.present(t, "webhook_deliveries", succeeded), "its event went in this run")
	require.Equal(t, int64(1), f.prune(t).WebhookDeliveries, "and the delivery in the next")
}

// A worker that lost its shard lease deletes nothing: each prune
// transaction starts with the fence. The new holder prunes.
func TestRetentionPruneIsFenced(t *testing.T) {
	t.Parallel()
	f := setupRetention(t)
	f.event(t)
	f.event(t)
	f.idempotencyKey(t, "k", time.Hour)
	f.d.AdvanceSimClock(t, 31*day)
	f.event(t)

	shard := workqueue.ShardLeaseName(workqueue.ShardOf(commands.RetentionPruneKey))
	zombie, err := lease.Acquire(f.ctx, f.d.Q, shard, "zombie", lease.TTL)
	require.NoError(t, err)
	f.d.AdvanceSimClock(t, lease.TTL+time.Second)
	heir, err := lease.Acquire(f.ctx, f.d.Q, shard, "heir", lease.TTL)
	require.NoError(t, err)

	before := f.count(t, "SELECT count(*) FROM outbox")
	err = f.p.HandleRetentionPrune(f.ctx, workqueue.Item{Kind: commands.KindRetentionPrune,
		Key: commands.RetentionPruneKey, Lease: zombie})
	require.ErrorIs(t, err, lease.ErrFenced)
	require.Equal(t, before, f.count(t, "SELECT count(*) FROM outbox"), "the zombie deleted no event")
	require.Equal(t, 1, f.count(t, "SELECT count(*) FROM idempotency_keys"), "nor a key")

	res, err := f.p.Prune(f.ctx, func(tx pgx.Tx) error { return heir.Fence(f.ctx, tx) })
	require.NoError(t, err)
	require.Equal(t, int64(1), res.IdempotencyKeys)
	require.Equal(t, int64(before-1), res.Events)
}

// Pruning stops at the first event a sink still needs: past the lowest
// durable sink cursor, an event with a webhook delivery pending. What it
// deletes is always a prefix of the log, so an old event after a young
// one waits.
func TestRetentionKeepsWhatSinksStillNeed(t *testing.T) {
	t.Parallel()
	f := setupRetention(t)
	var log []outbox.Stored
	for range 6 {
		log = append(log, f.event(t))
	}
	f.d.AdvanceSimClock(t, 31*day)
	newest := f.event(t)
	saveCursor := func(sink string, p outbox.Position) {
		require.NoError(t, f.d.Q.OutboxCursorSave(f.ctx, db.OutboxCursorSaveParams{Sink: sink, Txid: p.TxID, Seq: p.Seq}))
	}
	retained := func() []uuid.UUID {
		rows, err := f.d.Pool.Query(f.ctx, "SELECT id FROM outbox ORDER BY txid, seq")
		require.NoError(t, err)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		require.NoError(t, err)
		return ids
	}
	ids := func(events ...outbox.Stored) []uuid.UUID {
		out := make([]uuid.UUID, len(events))
		for i, e := range events {
			out[i] = e.ID
		}
		return out
	}
	saveCursor("fast", newest.Position)
	saveCursor("slow", log[1].Position)
	f.delivery(t, "we_1", log[4].ID, "pending")

	f.prune(t)
	require.Equal(t, ids(append(log[2:], newest)...), retained(), "up to the slow sink's cursor, inclusive")

	saveCursor("slow", newest.Position)
	f.prune(t)
	require.Equal(t, ids(log[4], log[5], newest), retained(), "up to the event whose delivery is pending")

	_, err := f.d.Pool.Exec(f.ctx, "UPDATE webhook_deliveries SET state = 'succeeded'")
	require.NoError(t, err)
	f.prune(t)
	require.Equal(t, ids(newest), retained(), "the newest event always stays")

	// Times do not follow positions: a late-committing transaction can
	// carry an older time. An old event behind a young one waits.
	young := f.event(t)
	_, err = f.d.Pool.Exec(f.ctx, "UPDATE outbox SET time = time - interval '40 days' WHERE id = $1", young.ID)
	require.NoError(t, err)
	f.event(t)
	saveCursor("slow", outbox.Position{TxID: ^uint64(0) >> 1})
	saveCursor("fast", outbox.Position{TxID: ^uint64(0) >> 1})
	f.prune(t)
	require.Contains(t, retained(), young.ID, "kept behind the younger newest")
}

// The pruner is a work-queue item ensured at worker start: it prunes in
// batches, runs again soon while a run leaves rows behind, and every
// COMPUTE_PRUNE_EVERY after that.
func TestRetentionPrunerReschedulesItself(t *testing.T) {
	t.Parallel()
	f := setupRetention(t)
	for i := range 7 {
		f.idempotencyKey(t, string(rune('a'+i)), time.Minute)
	}
	f.d.AdvanceSimClock(t, time.Hour)
	f.p.Every, f.p.Batch, f.p.BatchesPerRun = 30*time.Minute, 2, 2
	require.NoError(t, f.p.EnsureRetentionPrune(f.ctx))
	w := workqueue.NewWorker(f.d.Pool, "worker", clock.New(nil), nil)
	w.Handle(commands.KindRetentionPrune, f.p.HandleRetentionPrune)
	due := func() time.Duration {
		it, err := f.d.Q.WorkQueueGet(f.ctx, db.WorkQueueGetParams{Kind: commands.KindRetentionPrune, Key: commands.RetentionPruneKey})
		require.NoError(t, err)
		return it.NotBefore.Sub(f.d.Now(t))
	}

	runOnce := func() {
		n, err := w.RunOnce(f.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	runOnce()
	require.Equal(t, 3, f.count(t, "SELECT count(*) FROM idempotency_keys"), "two batches of two")
	require.Equal(t, time.Second, due(), "rows were left: again soon")
	f.d.AdvanceSimClock(t, time.Second)
	runOnce()
	require.Zero(t, f.count(t, "SELECT count(*) FROM idempotency_keys"))
	require.Equal(t, 30*time.Minute, due(), "done: again after Every")

	require.NoError(t, f.p.EnsureRetentionPrune(f.ctx))
	require.Zero(t, due(), "a worker start makes it due: one run per start")
}

// Overdue counts what is past its retention and still there, for
// `compute check`, and names the sink that holds events back.
func TestRetentionOverdueCountsWhatIsLeft(t *testing.T) {
	t.Parallel()
	f := setupRetention(t)
	first := f.event(t)
	f.event(t)
	f.idempotencyKey(t, "k", time.Hour)
	f.billingDelivery(t, "cmp:a1:accepted", true)
	require.NoError(t, f.d.Q.OutboxCursorSave(f.ctx, db.OutboxCursorSaveParams{Sink: "projection-x",
		Txid: first.Position.TxID, Seq: first.Position.Seq}))
	f.d.AdvanceSimClock(t, 31*day)
	f.event(t)
	old := f.count(t, "SELECT count(*) FROM outbox") - 1

	overdue := func() map[string]commands.OverdueRows {
		rows, err := f.p.Overdue(f.ctx)
		require.NoError(t, err)
		out := map[string]commands.OverdueRows{}
		for _, r := range rows {
			out[r.Table] = r
		}
		return out
	}
	got := overdue()
	require.Equal(t, int64(old), got["outbox"].Rows, "every event but the newest")
	require.Equal(t, int64(1), got["idempotency_keys"].Rows)
	require.Equal(t, int64(1), got["billing_deliveries"].Rows, "the accepted billing window")
	f.prune(t)
	got = overdue()
	require.Equal(t, int64(1), got["outbox"].Rows, "the event after the sink's cursor")
	require.Contains(t, got["outbox"].HeldBy, "projection-x")
	require.Zero(t, got["idempotency_keys"].Rows)

	forever := &commands.Pruner{Pool: f.d.Pool}
	rows, err := forever.Overdue(f.ctx)
	require.NoError(t, err)
	require.Equal(t, "outbox", rows[0].Table)
	require.Equal(t, "kept forever", rows[0].Rule)
	require.Zero(t, rows[0].Rows)
}

// compute check holds after retention pruned the log: an aggregate whose
// first events, or all of them, were pruned is not a transition without
// an event. What it still catches there is a gap among the events kept
// and a transition after them without its own; the oldest event kept could
// go unseen, as a pruned one would.
func TestCheckAfterPruning(t *testing.T) {
	t.Parallel()
	f := setupRetention(t)
	f.node(t, "n1", exclusive, exclusive)
	start := f.d.Now(t)
	res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: start.Add(40 * day)})
	f.d.AdvanceSimClock(t, 31*day)
	// Three transitions of the reservation after the pruned ones: extended
	// twice, then released.
	for _, end := range []time.Time{start.Add(45 * day), start.Add(50 * day)} {
		_, err := f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: res.Reservation.ID,
			NewEnd: end})
		require.NoError(t, err)
	}
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: res.Reservation.ID})
	require.NoError(t, err)
	f.event(t) // the newest event stays: make it not one of the reservation's
	require.Positive(t, f.prune(t).Events)
	var pruned bool
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT EXISTS (SELECT 1 FROM outbox_pruned)").Scan(&pruned))
	require.True(t, pruned, "the pruner records that it pruned the log")
	f.requireInvariants(t)

	for name, breach := range map[string]string{
		"a transition without an event": `UPDATE reservations SET version = version + 1 WHERE id = $1`,
		// The second extension's: the oldest event kept could be lost
		// unseen, as pruned, but not one between two kept.
		"a kept event lost": `DELETE FROM outbox WHERE subject = 'reservations/' || $1
		  AND (data->>'version')::bigint = (SELECT version - 1 FROM reservations WHERE id = $1)`,
	} {
		t.Run(name, func(t *testing.T) {
			tx, err := f.d.Pool.Begin(f.ctx)
			require.NoError(t, err)
			defer func() { require.NoError(t, tx.Rollback(f.ctx)) }()
			tag, err := tx.Exec(f.ctx, breach, res.Reservation.ID)
			require.NoError(t, err)
			require.Equal(t, int64(1), tag.RowsAffected())
			violations, err := invariants.Check(f.ctx, db.New(tx))
			require.NoError(t, err)
			require.Len(t, violations, 1, "%v", violations)
			require.Equal(t, invariants.EventVersions, violations[0].Invariant)
			require.Contains(t, violations[0].Detail, "reservations/"+res.Reservation.ID)
		})
	}
}

// The revocation feed keeps a day of changes, and always its newest one,
// so a process that starts finds where it ends; the tokens' state is not
// history and stays.
func TestRetentionPrunesTheRevocationFeed(t *testing.T) {
	t.Parallel()
	f := setupRetention(t)
	appendChange := func(token, change string) {
		_, err := f.d.Pool.Exec(f.ctx, "INSERT INTO authz_changes (token_id, change) VALUES ($1, $2)", token, change)
		require.NoError(t, err)
	}
	appendChange("tok_a", "created")
	appendChange("tok_a", "revoked")
	appendChange("tok_b", "created")
	f.d.AdvanceSimClock(t, commands.AuthzChangesKept-time.Second)
	require.Zero(t, f.prune(t).AuthzChanges, "a second early")

	f.d.AdvanceSimClock(t, 2*time.Second)
	require.Equal(t, int64(2), f.prune(t).AuthzChanges)
	require.Equal(t, 1, f.count(t, "SELECT count(*) FROM authz_changes WHERE token_id = 'tok_b'"), "the newest change stays")
	appendChange("tok_c", "created")
	f.d.AdvanceSimClock(t, commands.AuthzChangesKept+time.Second)
	require.Equal(t, int64(1), f.prune(t).AuthzChanges)
	require.Equal(t, 1, f.count(t, "SELECT count(*) FROM authz_changes WHERE token_id = 'tok_c'"))
}
