package chaos

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/pg/migrate"
	"github.com/bettercompute/compute/wire"
)

// TestKilledServerLeaseLapsesOnTheSimulatedClock guards the harness
// itself: a `compute serve` the test SIGKILLs never renews its leases
// again, so moving the simulated clock past their expiry must let them
// lapse, whether or not the test said anything about the kill. Here the
// server is killed and started again under the same gateway id, as a
// crash and a restart would: the new process answers its daemons 503
// while its predecessor's gateway lease is live, and once the clock has
// moved past the lease's expiry it takes the lease and answers them
// (a bogus credential gets 401, not 503). A harness that went on
// extending the dead process's lease would leave the restarted gateway
// answering 503 for ever.
func TestKilledServerLeaseLapsesOnTheSimulatedClock(t *testing.T) {
	runSize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dbURL, pool := freshDatabase(t)
	if err := migrate.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "SELECT compute_use_sim_clock(true)"); err != nil {
		t.Fatal(err)
	}
	sim := &simClock{t: t, pool: pool}
	// The worker (the liveness sweep advanceTo waits on) lives in a
	// process of its own that stays up; only the gateway process dies.
	hub := newServer(t, "lapse-hub", dbURL, "api,worker,dispatcher")
	srv := newServer(t, "lapse-gw", dbURL, "gateway")
	for _, s := range []*server{hub, srv} {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	leaseName := gateway.GatewayLeaseName("lapse-gw")
	ownerOf := func() (owner string, expires time.Time) {
		_ = pool.QueryRow(ctx, "SELECT owner, expires_at FROM leases WHERE name = $1", leaseName).Scan(&owner, &expires)
		return owner, expires
	}
	first := srv.OwnerPrefix()
	waitFor(t, ctx, "gateway lease held by the first process", 30*time.Second, func() (bool, error) {
		owner, _ := ownerOf()
		return strings.HasPrefix(owner, first), nil
	})

	srv.Kill() // nothing else: the harness must know the process is gone
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	second := srv.OwnerPrefix()
	owner, expires := ownerOf()
	if !strings.HasPrefix(owner, first) {
		t.Fatalf("gateway lease owner %q right after the restart, want the killed process's (%s…)", owner, first)
	}
	if got := sessionStatus(ctx, t, srv); got != http.StatusServiceUnavailable {
		t.Fatalf("restarted gateway answers %d while its predecessor's lease is live, want 503", got)
	}

	sim.advanceTo(ctx, expires.Add(time.Second))
	waitFor(t, ctx, "gateway lease taken by the restarted process", 30*time.Second, func() (bool, error) {
		owner, _ := ownerOf()
		return strings.HasPrefix(owner, second), nil
	})
	if got := sessionStatus(ctx, t, srv); got != http.StatusUnauthorized {
		t.Fatalf("restarted gateway answers %d to a bogus credential once it holds its lease, want 401", got)
	}
}

// sessionStatus is the status a gateway answers a daemon session request
// with a credential no node has.
func sessionStatus(ctx context.Context, t *testing.T, s *server) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+gatewayAddr(t, s)+wire.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer not-a-node-credential")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("gateway session request: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
