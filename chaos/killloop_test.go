package chaos

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	// killGapMin and killGapMax space the SIGKILLs: the load runs this
	// long between two kills (a fault schedule, not a wait).
	killGapMin = 200 * time.Millisecond
	killGapMax = 800 * time.Millisecond
	// terminateEvery is how many kills pass between two rounds of
	// pg_terminate_backend on the service's sessions.
	terminateEvery = 3
	// terminatePerRound is how many random service sessions each round ends.
	terminatePerRound = 3
	// recoveryDeadline bounds the wait for the first commit after a fault.
	recoveryDeadline = 60 * time.Second
	loadWorkers      = 8
)

// TestKillLoop runs the reservation + webhook load while the server is
// SIGKILLed and restarted over and over, its database sessions are
// terminated, and PostgreSQL itself crashes (pg_ctl stop -m immediate) for
// a while mid-run. Then it audits: nothing acknowledged lost, every
// transition has its event and every event reached the receiver, nothing
// applied twice, the capacity invariants hold.
func TestKillLoop(t *testing.T) {
	sz := runSize(t)
	ctx := t.Context()
	t0 := time.Now()
	dbURL, pool := freshDatabase(t)
	srv := newServer(t, "all-roles", dbURL, "api,worker,dispatcher,gateway")
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, member := seed(t, ctx, srv.URL(), dbURL, fleet{nodes: 4, gpusPerNode: 8, gpuQuota: 100000})
	rcv := newReceiver(t)
	registerWebhook(t, ctx, srv.URL(), member, rcv)

	led := newLedger()
	stop := make(chan struct{})
	wg := newLoad(member, led, srv.URL()).run(loadWorkers, stop)
	began := time.Now()

	var afterKill []time.Duration
	terminated := 0
	var pgRecovery, pgDownFor time.Duration
	for i := range sz.kills {
		pause(killGapMin + rand.N(killGapMax-killGapMin))
		killedAt := time.Now()
		srv.Kill()
		if err := srv.Start(ctx); err != nil {
			t.Fatalf("restart %d: %v", i+1, err)
		}
		afterKill = append(afterKill, waitFirstCommit(t, ctx, led, killedAt))
		if i%terminateEvery == terminateEvery-1 {
			terminated += terminateSessions(t, ctx, pool, terminatePerRound)
		}
		if i == sz.kills/2 {
			pgDownFor, pgRecovery = crashPostgres(t, ctx, sz.pgDown, srv, led)
		}
	}
	close(stop)
	wg.Wait()
	loadFor := time.Since(began)
	t.Logf("setup (build, PostgreSQL, seed) %.1fs, faults and load %.1fs", began.Sub(t0).Seconds(), loadFor.Seconds())

	a := runAudit(t, ctx, pool, led, rcv)
	slices.Sort(afterKill)
	t.Logf("FIGURES kill-loop size=%s: kills=%d sessions_terminated=%d pg_down=%.0fs load=%.0fs commits=%d retries=%d gave_up=%d release_409=%d",
		sz.name, len(afterKill), terminated, pgDownFor.Seconds(), loadFor.Seconds(), len(led.commits), led.retries.Load(), led.gaveUp, led.releaseConf.Load())
	t.Logf("FIGURES kill-loop size=%s: first commit after SIGKILL (kill→restart→commit) p50=%.2fs max=%.2fs; after PostgreSQL restart=%.2fs",
		sz.name, afterKill[len(afterKill)/2].Seconds(), afterKill[len(afterKill)-1].Seconds(), pgRecovery.Seconds())
	t.Logf("FIGURES kill-loop size=%s: %s", sz.name, a)
	if a.AckedLost != 0 || a.Acked == 0 {
		t.Errorf("acked=%d lost=%d", a.Acked, a.AckedLost)
	}
}

// pause holds a fault (or the gap between faults) for d: a deliberate
// duration, never a wait for something to happen.
func pause(d time.Duration) { time.Sleep(d) }

// waitFirstCommit polls until the load has a write acknowledged after t and
// returns how long after t that was.
func waitFirstCommit(t *testing.T, ctx context.Context, led *ledger, at time.Time) time.Duration {
	t.Helper()
	if err := pollUntil(ctx, recoveryDeadline, func() (bool, error) { return led.firstCommitAfter(at) >= 0, nil }); err != nil {
		t.Fatalf("no commit after the fault at %s: %v", at.Format(time.TimeOnly), err)
	}
	return led.firstCommitAfter(at)
}

// terminateSessions ends up to n random sessions of the service (its
// application_name is "compute") and returns how many it ended.
func terminateSessions(t *testing.T, ctx context.Context, pool *pgxpool.Pool, n int) int {
	t.Helper()
	var ended int
	err := pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE ok) FROM (
		  SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
		   WHERE datname = current_database() AND application_name = 'compute' AND pid <> pg_backend_pid()
		   ORDER BY random() LIMIT $1) s`, n).Scan(&ended)
	if err != nil {
		t.Fatalf("pg_terminate_backend: %v", err)
	}
	return ended
}

// crashPostgres stops PostgreSQL immediately (as a power cut would), keeps
// it down for down, starts it again and returns how long it was down and how
// long after it accepted connections again the first write was acknowledged.
// The server is left running through the outage; if it exited, it is
// started again.
func crashPostgres(t *testing.T, ctx context.Context, down time.Duration, srv *server, led *ledger) (time.Duration, time.Duration) {
	t.Helper()
	c := sharedCluster(t)
	crashedAt := time.Now()
	if err := c.Crash(ctx); err != nil {
		t.Fatal(err)
	}
	pause(down)
	if err := c.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	upAt := time.Now()
	if !srv.Alive() {
		t.Logf("%s exited during the PostgreSQL outage; starting it again", srv.name)
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return upAt.Sub(crashedAt), waitFirstCommit(t, ctx, led, upAt)
}
