package chaos

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	// preKillLoad is how long the load runs before each kill.
	preKillLoad = 2 * time.Second
	// throughputWorkers is the load's concurrency in both throughput runs.
	throughputWorkers = 16
)

// TestSeveralProcesses runs `compute serve` processes with split roles on
// one PostgreSQL — api, worker, dispatcher, gateway, one role each — under
// load. It measures API throughput with one, two and four api processes,
// then SIGKILLs the worker and, separately, the dispatcher, each time
// starting a replacement (a new process, hence a new lease owner) that must
// hold every lease of the killed one (shard:*, singleton:outbox-dispatch:*)
// within one lease TTL. The audit must find no lost work-queue item (every
// webhook delivery succeeded), no lost event and no double delivery after
// dedup.
func TestSeveralProcesses(t *testing.T) {
	sz := runSize(t)
	ctx := t.Context()
	dbURL, pool := freshDatabase(t)
	apis := []*server{newServer(t, "api-1", dbURL, "api")}
	if err := apis[0].Start(ctx); err != nil { // migrates before the others start
		t.Fatal(err)
	}
	worker := newServer(t, "worker", dbURL, "worker")
	dispatcher := newServer(t, "dispatcher", dbURL, "dispatcher")
	gw := newServer(t, "gateway", dbURL, "gateway")
	for _, s := range []*server{worker, dispatcher, gw} {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	_, member := seed(t, ctx, apis[0].URL(), dbURL, fleet{nodes: 8, gpusPerNode: 8, gpuQuota: 100000})
	rcv := newReceiver(t)
	registerWebhook(t, ctx, apis[0].URL(), member, rcv)
	led := newLedger()

	// API throughput with 1, 2 and 4 api processes, the same load spread
	// over their URLs.
	rates := map[int]float64{}
	for _, n := range []int{1, 2, 4} {
		for len(apis) < n {
			s := newServer(t, fmt.Sprintf("api-%d", len(apis)+1), dbURL, "api")
			if err := s.Start(ctx); err != nil {
				t.Fatal(err)
			}
			apis = append(apis, s)
		}
		var urls []string
		for _, s := range apis {
			urls = append(urls, s.URL())
		}
		rates[n] = measureRate(led, newLoad(member, led, urls...), sz.throughput)
	}

	stop := make(chan struct{})
	wg := newLoad(member, led, apis[0].URL(), apis[1].URL()).run(loadWorkers, stop)
	takeovers := map[string]time.Duration{}
	leases := map[string]int{}
	for _, victim := range []*server{worker, dispatcher} {
		pause(preKillLoad)
		oldOwner := victim.OwnerPrefix()
		held := leasesHeldBy(t, ctx, pool, oldOwner)
		killedAt := time.Now()
		victim.Kill()
		if err := victim.Start(ctx); err != nil { // the replacement: a new process, a new owner
			t.Fatal(err)
		}
		newOwner := victim.OwnerPrefix()
		err := pollUntil(ctx, leaseTTL+takeoverSlack, func() (bool, error) {
			now := leasesHeldBy(t, ctx, pool, newOwner)
			return len(held) > 0 && containsAll(now, held), nil
		})
		takeovers[victim.name] = time.Since(killedAt)
		leases[victim.name] = len(held)
		if err != nil {
			t.Errorf("the %d leases of the killed %s not taken over within %s: %v", len(held), victim.name, leaseTTL+takeoverSlack, err)
		}
	}
	close(stop)
	wg.Wait()

	a := runAudit(t, ctx, pool, led, rcv)
	// A delivery the killed worker had sent but not yet recorded is taken
	// over with its shard and sent again: poll (deliveryCatchUp, the
	// audit's bound) until every delivery has succeeded; the receiver
	// dedups the repeat.
	var notSucceeded int
	caughtUp := time.Now()
	if err := pollUntil(ctx, deliveryCatchUp, func() (bool, error) {
		err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE state <> 'succeeded'`).Scan(&notSucceeded)
		return notSucceeded == 0, err
	}); err != nil {
		t.Logf("deliveries still not succeeded after %s: %v", deliveryCatchUp, err)
	}
	t.Logf("FIGURES multi-process size=%s: api_rate_1=%.1f/s api_rate_2=%.1f/s api_rate_4=%.1f/s ratio_2_to_1=%.2f ratio_4_to_1=%.2f (writes/s, %d workers, %s each)",
		sz.name, rates[1], rates[2], rates[4], rates[2]/rates[1], rates[4]/rates[1], throughputWorkers, sz.throughput)
	t.Logf("FIGURES multi-process size=%s: worker leases=%d taken over in %.1fs, dispatcher leases=%d taken over in %.1fs after SIGKILL (TTL %s); deliveries all succeeded %.1fs after the load; deliveries_not_succeeded=%d %s",
		sz.name, leases["worker"], takeovers["worker"].Seconds(), leases["dispatcher"], takeovers["dispatcher"].Seconds(), leaseTTL,
		time.Since(caughtUp).Seconds(), notSucceeded, a)
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

// leasesHeldBy lists the live shard and outbox sink leases whose owner
// starts with ownerPrefix.
func leasesHeldBy(t *testing.T, ctx context.Context, pool *pgxpool.Pool, ownerPrefix string) []string {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT name FROM leases
		WHERE (name LIKE 'shard:%' OR name LIKE 'singleton:outbox-dispatch:%') AND starts_with(owner, $1)
		ORDER BY name`, ownerPrefix)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// containsAll reports whether have holds every name of want.
func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
