package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	// leaseTTL is the shard and singleton lease time to live (15 s, renewed
	// every 5 s): a dead holder's leases are free at most this long after
	// its last renewal.
	leaseTTL = 15 * time.Second
	// takeoverSlack covers the new process's first acquire attempt and one
	// poll on top of the TTL, on a busy machine.
	takeoverSlack = 5 * time.Second
	// preKillLoad is how long the load runs on all four processes before
	// the worker/dispatcher is killed.
	preKillLoad = 2 * time.Second
	// throughputWorkers is the load's concurrency in both throughput runs.
	throughputWorkers = 16
)

// deliveryClaimTTL is the work queue's claim lifetime (workqueue.Worker's
// default ClaimTTL): how long an item claimed by a killed process waits.
const deliveryClaimTTL = time.Minute

// TestSeveralProcesses runs four `compute serve` processes with split roles
// on one PostgreSQL — two api, one worker+dispatcher, one gateway — under
// load, measures API throughput with one and two api processes, then
// SIGKILLs the worker+dispatcher and starts a replacement: it must hold
// every shard and sink lease within one lease TTL, and the audit must find
// no lost work-queue item (every webhook delivery succeeded), no lost event
// and no double delivery after dedup.
func TestSeveralProcesses(t *testing.T) {
	sz := runSize(t)
	ctx := t.Context()
	dbURL, pool := freshDatabase(t)
	api1 := newServer(t, "api-1", dbURL, "api")
	if err := api1.Start(ctx); err != nil { // migrates before the others start
		t.Fatal(err)
	}
	api2 := newServer(t, "api-2", dbURL, "api")
	wd := newServer(t, "worker-dispatcher", dbURL, "worker,dispatcher")
	gw := newServer(t, "gateway", dbURL, "gateway")
	for _, s := range []*server{api2, wd, gw} {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	_, member := seed(t, ctx, api1.URL(), dbURL, fleet{nodes: 8, gpusPerNode: 8, gpuQuota: 100000})
	rcv := newReceiver(t)
	registerWebhook(t, ctx, api1.URL(), member, rcv)
	led := newLedger()

	rate1 := measureRate(led, newLoad(member, led, api1.URL()), sz.throughput)
	rate2 := measureRate(led, newLoad(member, led, api1.URL(), api2.URL()), sz.throughput)

	stop := make(chan struct{})
	wg := newLoad(member, led, api1.URL(), api2.URL()).run(loadWorkers, stop)
	pause(preKillLoad)
	killedAt := time.Now()
	wd.Kill()
	if err := wd.Start(ctx); err != nil { // the replacement: a new process, a new owner
		t.Fatal(err)
	}
	newOwner := wd.OwnerPrefix()
	var leases int
	err := pollUntil(ctx, leaseTTL+takeoverSlack, func() (bool, error) {
		var n int
		leases, n = leaseHolders(t, ctx, pool, newOwner)
		return leases > 0 && n == leases, nil
	})
	takeover := time.Since(killedAt)
	if err != nil {
		t.Errorf("leases not taken over within %s: %v", leaseTTL+takeoverSlack, err)
	}
	close(stop)
	wg.Wait()

	a := runAudit(t, ctx, pool, led, rcv)
	// A delivery the killed worker had sent but not yet recorded stays
	// claimed until its work-queue claim lapses (one minute), then is sent
	// again and recorded: poll past that, the receiver dedups the repeat.
	var notSucceeded int
	if err := pollUntil(ctx, deliveryClaimTTL+takeoverSlack, func() (bool, error) {
		err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE state <> 'succeeded'`).Scan(&notSucceeded)
		return notSucceeded == 0, err
	}); err != nil {
		t.Logf("deliveries still not succeeded after %s: %v", deliveryClaimTTL+takeoverSlack, err)
	}
	t.Logf("FIGURES multi-process size=%s: api_rate_1=%.1f/s api_rate_2=%.1f/s ratio_2_to_1=%.2f (writes/s, %d workers, %s each)",
		sz.name, rate1, rate2, rate2/rate1, throughputWorkers, sz.throughput)
	t.Logf("FIGURES multi-process size=%s: leases=%d taken over in %.1fs after SIGKILL (TTL %s); deliveries_not_succeeded=%d %s",
		sz.name, leases, takeover.Seconds(), leaseTTL, notSucceeded, a)
	if notSucceeded != 0 {
		t.Errorf("%d webhook deliveries did not succeed", notSucceeded)
	}
	if a.Acked == 0 || a.AckedLost != 0 {
		t.Errorf("acked=%d lost=%d", a.Acked, a.AckedLost)
	}
}

// measureRate runs l for d and returns acknowledged writes per second.
func measureRate(led *ledger, l *load, d time.Duration) float64 {
	stop := make(chan struct{})
	from := time.Now()
	wg := l.run(throughputWorkers, stop)
	pause(d)
	to := time.Now()
	close(stop)
	wg.Wait()
	return float64(led.commitsBetween(from, to)) / to.Sub(from).Seconds()
}

// leaseHolders counts the live shard and outbox sink leases and how many of
// them the new owner holds.
func leaseHolders(t *testing.T, ctx context.Context, pool *pgxpool.Pool, newOwner string) (total, byNew int) {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT name, owner FROM leases WHERE name LIKE 'shard:%' OR name LIKE 'singleton:outbox-dispatch:%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, owner string
		if err := rows.Scan(&name, &owner); err != nil {
			t.Fatal(err)
		}
		total++
		if strings.HasPrefix(owner, newOwner) {
			byNew++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return total, byNew
}
