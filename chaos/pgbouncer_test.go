package chaos

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/bettercompute/compute/internal/testenv"
)

// pgbouncerLoad is how long the load runs through PgBouncer.
const pgbouncerLoad = 5 * time.Second

// TestPgBouncer runs the service through PgBouncer in transaction pooling
// mode — migrations, token issue, fleet seeding, reservations with
// idempotency keys, a SIGKILL and restart, event reads and webhook
// delivery — and audits as the fault tests do. LISTEN cannot work through
// PgBouncer, so pokes are off and every loop polls.
//
// Two client settings are tried: cache_describe named in the URL, and
// COMPUTE_PGBOUNCER=true, which selects the same mode (it once selected the
// simple protocol, under which pgx sent jsonb arguments as bytea literals
// and every event append failed with 22P02). cache_describe describes each
// statement once per connection and then runs it on the unnamed statement,
// which transaction pooling allows.
func TestPgBouncer(t *testing.T) {
	sz := runSize(t)
	t.Run("cache_describe", func(t *testing.T) {
		runThroughPgBouncer(t, sz, "default_query_exec_mode=cache_describe", "COMPUTE_LISTEN_URL=off")
	})
	t.Run("COMPUTE_PGBOUNCER=true", func(t *testing.T) {
		runThroughPgBouncer(t, sz, "", "COMPUTE_PGBOUNCER=true")
	})
}

// runThroughPgBouncer starts PgBouncer and one all-roles server behind it
// (its URL gets urlQuery), runs the load, and audits. The full size also
// SIGKILLs the server mid-load; the CI size leaves that to the kill loop,
// since a kill costs up to a minute of delivery catch-up (the work-queue
// claim of the killed process has to expire).
func runThroughPgBouncer(t *testing.T, sz size, urlQuery string, env ...string) {
	ctx := t.Context()
	directURL, pool := freshDatabase(t)
	bURL := testenv.StartPgBouncer(t, sharedCluster(t).Port(), directURL)
	if urlQuery != "" {
		bURL += "&" + urlQuery
	}
	srv := newServer(t, "via-pgbouncer", bURL, "api,worker,dispatcher,gateway", env...)
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, member := seed(t, ctx, srv.URL(), bURL, fleet{nodes: 2, gpusPerNode: 8, gpuQuota: 100000}, env...)
	rcv := newReceiver(t)
	registerWebhook(t, ctx, srv.URL(), member, rcv)
	led := newLedger()
	stop := make(chan struct{})
	wg := newLoad(member, led, srv.URL()).run(4, stop)
	pause(pgbouncerLoad / 2)
	if sz == fullSize {
		srv.Kill()
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pause(pgbouncerLoad / 2)
	close(stop)
	wg.Wait()

	a := runAudit(t, ctx, pool, led, rcv)
	listed := listEvents(t, ctx, member, srv.URL())
	t.Logf("FIGURES pgbouncer %s: commits=%d retries=%d events_listed=%d %s", t.Name(), len(led.commits), led.retries.Load(), listed, a)
	if a.Acked == 0 || a.AckedLost != 0 {
		t.Errorf("acked=%d lost=%d", a.Acked, a.AckedLost)
	}
	if listed < a.WebhookEvents {
		t.Errorf("GET /v1/events listed %d events, the outbox holds %d reservation events", listed, a.WebhookEvents)
	}
}

// listEvents pages through GET /v1/events and counts the tenant's events.
func listEvents(t *testing.T, ctx context.Context, cl *client, base string) int {
	t.Helper()
	n, cursor := 0, ""
	for range 1000 {
		var page struct {
			Items      []struct{ ID string } `json:"items"`
			NextCursor string                `json:"nextCursor"`
		}
		if err := cl.do(ctx, "GET", base+"/v1/events?limit=500&after="+url.QueryEscape(cursor), "", nil, &page); err != nil {
			t.Fatal(err)
		}
		n += len(page.Items)
		if len(page.Items) == 0 || page.NextCursor == "" || page.NextCursor == cursor {
			return n
		}
		cursor = page.NextCursor
	}
	t.Fatal("GET /v1/events never reached the end")
	return n
}
