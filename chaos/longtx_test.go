package chaos

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	// readyzEvery is how often the test samples /readyz during the hold.
	readyzEvery = 500 * time.Millisecond
	// frontierDegradedAfter mirrors frontierLagWarn in cmd/compute: past
	// it /readyz reports the outbox.frontier check degraded.
	frontierDegradedAfter = 10 * time.Second
	// catchUpDeadline bounds delivery of the held-back events once the
	// transaction ends.
	catchUpDeadline = 30 * time.Second
)

// TestLongTransaction holds one transaction with an xid open (in another
// database of the same cluster: the frontier is cluster-wide) while the load
// runs. Events keep committing but no reader may pass the frontier, so
// webhook delivery stalls; /readyz must show the lag growing (degraded past
// 10 s); once the transaction ends, delivery catches up and nothing is lost.
func TestLongTransaction(t *testing.T) {
	sz := runSize(t)
	ctx := t.Context()
	dbURL, pool := freshDatabase(t)
	// One tenant with one endpoint receives the whole backlog the hold
	// builds up (about 8,000 deliveries at full size while the load goes
	// on). With the default two attempts in flight per endpoint, draining
	// it within catchUpDeadline measured one endpoint's two slots, not the
	// frontier; eight in flight make it the frontier's test again.
	srv := newServer(t, "all-roles", dbURL, "api,worker,dispatcher,gateway", "COMPUTE_WEBHOOK_MAX_INFLIGHT_PER_ENDPOINT=8")
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	op, member := seed(t, ctx, srv.URL(), dbURL, fleet{nodes: 2, gpusPerNode: 8, gpuQuota: 100000})
	rcv := newReceiver(t)
	registerWebhook(t, ctx, srv.URL(), member, rcv)
	led := newLedger()
	stop := make(chan struct{})
	wg := newLoad(member, led, srv.URL()).run(4, stop)
	waitFirstCommit(t, ctx, led, time.Now())

	// The holder: BEGIN, take an xid, then sit idle in transaction.
	holder, err := pgx.Connect(ctx, sharedCluster(t).URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(context.Background())
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil {
		t.Fatal(err)
	}
	heldAt := time.Now()
	var maxLag float64
	sawDegraded := false
	for time.Since(heldAt) < sz.longTx {
		pause(readyzEvery)
		lag, status := frontierReadyz(t, ctx, srv.URL(), op.token)
		maxLag = max(maxLag, lag)
		sawDegraded = sawDegraded || status == "degraded"
	}
	receivedAtEnd := rcv.received()
	endedAt := time.Now()
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Events whose transaction began after the holder took its xid lie
	// beyond the frontier: none of them may have been delivered.
	heldBack := eventIDsBetween(t, ctx, pool, heldAt, endedAt)
	committedDuringHold, deliveredDuringHold := len(heldBack), 0
	for _, id := range heldBack {
		if receivedAtEnd[id] {
			deliveredDuringHold++
		}
	}

	// Catch-up: every event committed before the end reaches the receiver.
	want := eventIDsBetween(t, ctx, pool, time.Time{}, endedAt)
	if err := pollUntil(ctx, catchUpDeadline, func() (bool, error) { return len(rcv.missing(want)) == 0, nil }); err != nil {
		t.Errorf("delivery did not catch up after the transaction ended: %v", err)
	}
	catchUp := time.Since(endedAt)
	lagAfter, statusAfter := frontierReadyz(t, ctx, srv.URL(), op.token)
	close(stop)
	wg.Wait()
	a := runAudit(t, ctx, pool, led, rcv)

	t.Logf("FIGURES long-tx size=%s: held=%.1fs readyz_max_lag=%.1fs degraded_seen=%v events_committed_during_hold=%d delivered_during_hold=%d catch_up_after_end=%.2fs readyz_after=%.1fs/%s",
		sz.name, endedAt.Sub(heldAt).Seconds(), maxLag, sawDegraded, committedDuringHold, deliveredDuringHold, catchUp.Seconds(), lagAfter, statusAfter)
	t.Logf("FIGURES long-tx size=%s: %s", sz.name, a)
	if maxLag < sz.longTx.Seconds()*0.7 {
		t.Errorf("/readyz reported at most %.1fs of frontier lag during a %s hold", maxLag, sz.longTx)
	}
	if sz.longTx > frontierDegradedAfter+2*time.Second && !sawDegraded {
		t.Error("/readyz never reported outbox.frontier degraded")
	}
	if committedDuringHold == 0 {
		t.Error("no event committed during the hold: the load stalled, the test proves nothing")
	}
	if deliveredDuringHold != 0 {
		t.Errorf("%d of %d events committed during the hold were delivered past the frontier", deliveredDuringHold, committedDuringHold)
	}
	if a.AckedLost != 0 {
		t.Errorf("acked lost: %d", a.AckedLost)
	}
}

// frontierReadyz reads the outbox.frontier check of /readyz, which shows
// its checks to an operator token only.
func frontierReadyz(t *testing.T, ctx context.Context, base, operatorToken string) (float64, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Checks map[string]struct {
			Status  string   `json:"status"`
			Seconds *float64 `json:"seconds"`
		} `json:"checks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	c, ok := body.Checks["outbox.frontier"]
	if !ok || c.Seconds == nil {
		t.Fatalf("/readyz has no outbox.frontier seconds: %+v", body)
	}
	return *c.Seconds, c.Status
}

// eventIDsBetween lists the tenant's reservation events whose transaction
// began in [from, to) (outbox.time is the transaction's compute_now()).
func eventIDsBetween(t *testing.T, ctx context.Context, pool *pgxpool.Pool, from, to time.Time) []string {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT id::text FROM outbox WHERE tenant_id = $1 AND type LIKE 'reservation.%' AND time >= $2 AND time < $3`,
		tenant, from, to)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
