package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/invariants"
)

// deliveryCatchUp bounds how long the audit waits for webhook delivery to
// reach every event once the faults are over.
const deliveryCatchUp = 90 * time.Second

// audit is what a fault test reports. Every *Lost, Duplicate and
// Violations figure must be 0.
type audit struct {
	Acked             int // reservations with an acknowledged write
	AckedLost         int // acknowledged but missing, or in an earlier/illegal state
	Reservations      int // rows in the database (committed, acknowledged or not)
	TransitionsNoEvt  int // committed reservation versions with no outbox event
	WebhookEvents     int // outbox events the endpoint should get
	WebhookLost       int // of those, never received once delivery caught up
	DuplicateEffects  int // a key booked twice, a reservation without its key, an event applied twice
	Violations        int // internal/invariants.Check
	RawDeliveries     int // deliveries received, duplicates included
	UniqueDeliveries  int // distinct webhook-ids received
	DeliveryCatchUp   time.Duration
	InvariantMessages []string
}

func (a audit) String() string {
	return fmt.Sprintf("acked=%d acked_lost=%d reservations=%d transitions_without_event=%d webhook_events=%d webhook_lost=%d "+
		"duplicate_effects=%d invariant_violations=%d raw_deliveries=%d (dups absorbed by dedup=%d) delivery_catch_up=%.1fs",
		a.Acked, a.AckedLost, a.Reservations, a.TransitionsNoEvt, a.WebhookEvents, a.WebhookLost,
		a.DuplicateEffects, a.Violations, a.RawDeliveries, a.RawDeliveries-a.UniqueDeliveries, a.DeliveryCatchUp.Seconds())
}

// runAudit checks the database and the receiver against the ledger, after
// the faults and the load have stopped. It fails t on any loss or
// duplicate and returns the figures for the report.
func runAudit(t *testing.T, ctx context.Context, pool *pgxpool.Pool, led *ledger, rcv *receiver) audit {
	t.Helper()
	var a audit
	led.mu.Lock()
	acked := make(map[string]ack, len(led.acked))
	for id, ak := range led.acked {
		acked[id] = ak
	}
	a.DuplicateEffects = led.keyMismatch
	led.mu.Unlock()
	a.Acked = len(acked)

	// Acknowledged writes: present, in the acknowledged state or one the
	// state table allows after it.
	table := core.ReservationStateTable()
	rows, err := pool.Query(ctx, `SELECT id, state, version FROM reservations WHERE tenant_id = $1`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	inDB := map[string]ack{}
	for rows.Next() {
		var id string
		var ak ack
		if err := rows.Scan(&id, &ak.State, &ak.Version); err != nil {
			t.Fatal(err)
		}
		inDB[id] = ak
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	a.Reservations = len(inDB)
	for id, want := range acked {
		got, ok := inDB[id]
		if !ok || got.Version < want.Version || !reachable(table, core.State(want.State), core.State(got.State)) {
			a.AckedLost++
			t.Errorf("acknowledged %s %+v, database has %+v (present=%v)", id, want, got, ok)
		}
	}

	// Every committed transition (each version) has its event, and every
	// reservation has the idempotency key that created it.
	err = pool.QueryRow(ctx, `
		SELECT count(*) FROM reservations r, generate_series(1, r.version) v
		 WHERE r.tenant_id = $1 AND NOT EXISTS (
		       SELECT 1 FROM outbox o WHERE o.subject = 'reservations/' || r.id AND (o.data->>'version')::bigint = v)`,
		tenant).Scan(&a.TransitionsNoEvt)
	if err != nil {
		t.Fatal(err)
	}
	var keysWithResult int
	err = pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys WHERE tenant_id = $1 AND response ? 'result'`, tenant).Scan(&keysWithResult)
	if err != nil {
		t.Fatal(err)
	}
	a.DuplicateEffects += max(a.Reservations-keysWithResult, 0)

	// Webhooks: every reservation event of the tenant reaches the receiver
	// once dispatch catches up.
	var want []string
	rows, err = pool.Query(ctx, `SELECT id::text FROM outbox WHERE tenant_id = $1 AND type LIKE 'reservation.%' ORDER BY txid, seq`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	want, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	a.WebhookEvents = len(want)
	start := time.Now()
	if err := pollUntil(ctx, deliveryCatchUp, func() (bool, error) { return len(rcv.missing(want)) == 0, nil }); err != nil {
		t.Errorf("webhook delivery did not catch up: %v", err)
	}
	a.DeliveryCatchUp = time.Since(start)
	a.WebhookLost = len(rcv.missing(want))
	st := rcv.stats()
	a.RawDeliveries, a.UniqueDeliveries = st.Raw, st.Unique
	a.DuplicateEffects += st.DoubleApplied
	if st.Rejected > 0 {
		t.Errorf("%d deliveries failed signature verification", st.Rejected)
	}

	// The capacity invariants, on one snapshot.
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	vs, err := invariants.Check(ctx, db.New(tx))
	if err != nil {
		t.Fatal(err)
	}
	a.Violations = len(vs)
	for _, v := range vs {
		a.InvariantMessages = append(a.InvariantMessages, v.String())
	}

	if a.TransitionsNoEvt != 0 || a.WebhookLost != 0 || a.DuplicateEffects != 0 || a.Violations != 0 {
		t.Errorf("audit failed: %s\n%v", a, a.InvariantMessages)
	}
	return a
}

// reachable reports whether to equals from or follows it through the
// state table (the reservation may have moved on since it was acknowledged).
func reachable(t core.StateTable, from, to core.State) bool {
	seen := map[core.State]bool{from: true}
	queue := []core.State{from}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s == to {
			return true
		}
		for _, n := range t.Next[s] {
			if !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return false
}
