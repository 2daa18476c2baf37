package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
)

// setupFleetTimeout is setupFleet, built under the default command
// deadline, and a second server on the same database and dependencies
// whose command deadline is timeout: the fleet's own requests carry the
// deadline under test, and the setup does not (on a loaded machine a
// setup request can take longer than a deadline short enough to test).
func setupFleetTimeout(t *testing.T, timeout time.Duration) (setupFleet, underTest *fleet) {
	t.Helper()
	h := new(commands.Handlers)
	routes := httpapi.CapacityRoutes(h)
	var deps httpapi.Deps
	s := setupWith(t, func(d *httpapi.Deps) { deps = *d }, routes)
	*h = *commands.New(s.pg.Pool, commands.Config{})
	f := &fleet{testServer: s, gpus: []string{"GPU-n1-0", "GPU-n1-1"}}
	_, f.member = s.tokenFor(t, "acme", "alice@acme", core.RoleMember)
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/sites", s.operator, `{"id":"fra1","name":"Frankfurt 1"}`, nil)
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/pools", s.operator,
		`{"id":"fra1-gpu","siteId":"fra1","kind":"bare-metal","cpuRatio":2}`, nil)
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/nodes", s.operator, `{"id":"n1","poolId":"fra1-gpu",
		"vcpu":64,"memoryMb":524288,"diskGb":2000,
		"gpus":[{"uuid":"GPU-n1-0","model":"a100","memoryMb":81920},{"uuid":"GPU-n1-1","model":"a100","memoryMb":81920}]}`, nil)
	for res, max := range map[string]int{"gpu": 2, "vcpu": 64, "memory": 65536, "disk": 500} {
		f.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/"+res, s.operator, map[string]int{"max": max}, nil)
	}

	deps.CommandTimeout = timeout
	deps.Registry = prometheus.NewRegistry() // a registry takes each metric once
	srv := httptest.NewServer(httpapi.New(deps, routes))
	t.Cleanup(srv.Close)
	ts := *s
	ts.url = srv.URL
	return f, &fleet{testServer: &ts, member: f.member, gpus: f.gpus}
}

// awaitTransactionsEnded waits until no other session of the test's
// database is inside a transaction: a command cut short has rolled back (or,
// wrongly, committed) by then, so what it left can be counted.
func awaitTransactionsEnded(t *testing.T, f *fleet) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, f.pg.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL`).Scan(&n))
		return n == 0
	}, 10*time.Second, 20*time.Millisecond, "a transaction of the test's database never ended")
}

// lockQuotaRows holds FOR UPDATE on acme's quota_usage rows in another
// connection until the returned function commits.
func lockQuotaRows(t *testing.T, f *fleet) func() {
	t.Helper()
	ctx := context.Background()
	tx, err := f.pg.Pool.Begin(ctx)
	require.NoError(t, err)
	rows, err := tx.Query(ctx, "SELECT 1 FROM quota_usage WHERE tenant_id = 'acme' FOR UPDATE")
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		n++
	}
	require.NoError(t, rows.Err())
	require.Positive(t, n)
	done := false
	t.Cleanup(func() {
		if !done {
			_ = tx.Rollback(ctx)
		}
	})
	return func() { done = true; require.NoError(t, tx.Commit(ctx)) }
}

func (f *fleet) countOutbox(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, f.pg.Pool.QueryRow(context.Background(), "SELECT count(*) FROM outbox").Scan(&n))
	return n
}

// A command stuck behind a lock past COMPUTE_COMMAND_TIMEOUT answers 503
// UNAVAILABLE with Retry-After, and nothing of it is written.
func TestCommandDeadlineOnLock(t *testing.T) {
	f, strict := setupFleetTimeout(t, 500*time.Millisecond)
	outbox := f.countOutbox(t)
	commit := lockQuotaRows(t, f)

	begin := time.Now()
	r := strict.send(t, http.MethodPost, "/v1/reservations", f.member, f.reservationBody(t, 1), nil)
	took := time.Since(begin)
	require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
	require.Equal(t, core.CodeUnavailable, r.errorBody(t).Code)
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", r.header.Get("Retry-After"))
	require.GreaterOrEqual(t, secs, 1)
	require.Less(t, took, 5*time.Second)

	commit()
	awaitTransactionsEnded(t, f)
	require.Zero(t, f.countReservations(t, "acme"))
	require.Equal(t, outbox, f.countOutbox(t))
	require.NotContains(t, f.logs.String(), `"code":"INTERNAL"`)

	// With the lock gone the same command goes through (under the
	// generous deadline: this one only shows the lock was the cause).
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, f.reservationBody(t, 1), nil)
}

// A client that disconnects while its command waits on a lock cancels the
// command: the transaction is rolled back before the lock is released, and
// nothing of it is written.
func TestCommandCancelledOnDisconnect(t *testing.T) {
	f, patient := setupFleetTimeout(t, time.Minute)
	outbox := f.countOutbox(t)
	commit := lockQuotaRows(t, f)

	waiting := func() int {
		var n int
		require.NoError(t, f.pg.Pool.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&n))
		return n
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := jsonBody(t, f.reservationBody(t, 1))
	errc := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, patient.url+"/v1/reservations", body)
		if err != nil {
			errc <- err
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+f.member)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	require.Eventually(t, func() bool { return waiting() == 1 }, 5*time.Second, 20*time.Millisecond,
		"the command never waited on the lock")
	cancel()
	require.Error(t, <-errc)
	// The server cancels the waiting statement without the lock going away.
	require.Eventually(t, func() bool { return waiting() == 0 }, 5*time.Second, 20*time.Millisecond,
		"the command still waits after its client left")

	commit()
	awaitTransactionsEnded(t, f)
	require.Zero(t, f.countReservations(t, "acme"))
	require.Equal(t, outbox, f.countOutbox(t))
}

func jsonBody(t *testing.T, v any) io.Reader {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return bytes.NewReader(raw)
}
