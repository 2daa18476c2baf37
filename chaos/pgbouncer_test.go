package chaos

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/bettercompute/compute/internal/testenv"
)

// pgbouncerLoad is how long the load runs through PgBouncer.
const pgbouncerLoad = 5 * time.Second

// pgbouncerINI puts PgBouncer 1.18 in transaction pooling mode in front of
// the cluster. Every database name is routed (pgtest-style per-test
// databases need no entry of their own). PgBouncer refuses startup
// parameters it does not know, so the service's
// idle_in_transaction_session_timeout is dropped at the door and set again
// on every server connection with connect_query: without it a transaction
// left open would hold the outbox frontier back unbounded.
const pgbouncerINI = `[databases]
* = host=127.0.0.1 port=%d connect_query='SET idle_in_transaction_session_timeout = 30000'

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 500
default_pool_size = 40
ignore_startup_parameters = extra_float_digits,idle_in_transaction_session_timeout
logfile = %s
pidfile = %s
admin_users = postgres
`

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
	bouncer := findPgBouncer(t)
	t.Run("cache_describe", func(t *testing.T) {
		runThroughPgBouncer(t, sz, bouncer, "default_query_exec_mode=cache_describe", "COMPUTE_LISTEN_URL=off")
	})
	t.Run("COMPUTE_PGBOUNCER=true", func(t *testing.T) {
		runThroughPgBouncer(t, sz, bouncer, "", "COMPUTE_PGBOUNCER=true")
	})
}

// runThroughPgBouncer starts PgBouncer and one all-roles server behind it
// (its URL gets urlQuery), runs the load, and audits. The full size also
// SIGKILLs the server mid-load; the CI size leaves that to the kill loop,
// since a kill costs up to a minute of delivery catch-up (the work-queue
// claim of the killed process has to expire).
func runThroughPgBouncer(t *testing.T, sz size, bouncer, urlQuery string, env ...string) {
	ctx := t.Context()
	directURL, pool := freshDatabase(t)
	bURL := startPgBouncer(t, bouncer, sharedCluster(t).Port(), directURL)
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

// findPgBouncer returns the pgbouncer binary, installing the Debian package
// when it is missing and this process may (root with apt-get); otherwise
// the test is skipped with the reason, or fails under CI.
func findPgBouncer(t *testing.T) string {
	t.Helper()
	return testenv.Program(t, "pgbouncer", "", "pgbouncer")
}

// startPgBouncer runs PgBouncer on a free loopback port and returns the URL
// of the same database through it. PgBouncer refuses to run as root, so as
// root it runs as the postgres user, from a directory that user owns.
func startPgBouncer(t *testing.T, bin string, pgPort int, directURL string) string {
	t.Helper()
	dir, err := os.MkdirTemp(shared.tmp, "pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		testenv.Require(t, err == nil, "running as root and there is no postgres user to run pgbouncer as: %v", err)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	_, portText, _ := net.SplitHostPort(freeAddr(t))
	port, _ := strconv.Atoi(portText)
	userlist := filepath.Join(dir, "userlist.txt")
	if err := os.WriteFile(userlist, []byte(`"postgres" ""`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ini := filepath.Join(dir, "pgbouncer.ini")
	logPath := filepath.Join(dir, "pgbouncer.log")
	conf := fmt.Sprintf(pgbouncerINI, pgPort, port, userlist, logPath, filepath.Join(dir, "pgbouncer.pid"))
	if err := os.WriteFile(ini, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, ini)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		if t.Failed() {
			t.Logf("pgbouncer log tail:\n%s", tail(logPath, 3000))
		}
	})
	addr := net.JoinHostPort("127.0.0.1", portText)
	err = pollUntil(t.Context(), 10*time.Second, func() (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("pgbouncer exited:\n%s", tail(logPath, 3000))
		default:
		}
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(directURL)
	u.Host = addr
	return u.String()
}
