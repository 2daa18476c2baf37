package chaos

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bettercompute/compute/internal/pg/cluster"
	"github.com/bettercompute/compute/internal/testenv"
)

// suites are the packages whose tests run through PgBouncer: the capacity
// torture test and the command, projection, query, HTTP and webhook
// integration tests. Packages that LISTEN (outbox, events) or start their
// own servers are left out: LISTEN needs a direct connection, which
// PgBouncer's transaction pooling cannot give.
var suites = []string{
	"./commands/", "./torture/", "./projections/", "./queries/", "./httpapi/", "./webhook/", "./internal/lease/", "./internal/workqueue/",
}

// suitesSkip are the suites' tests whose subject is not the connection but
// volume or plans, and which make test has just run directly: a soak of 120
// simulated days, a plan-settling loop over 300 nodes, the row-count tests
// over 20k-row tables, the fair-share ordering over a long history, and the
// read-replica tests (which start replicas of their own). Through PgBouncer
// they ran the same statements again for about three minutes of CPU out of
// make test's budget.
var suitesSkip = strings.Join([]string{
	"TestSoakMonthsOfRetention", "TestWritePathSettlesOnGenericPlans", "TestPlacementCandidatesReadTheSampleOnly",
	"TestTenantReservationPagesReadThePage", "TestFairShareServesTheLightTenantFirst", "TestReplica", "TestStalledReplica",
}, "|")

// TestSuitesThroughPgBouncer runs the suites with every test connection
// going through PgBouncer in transaction pooling mode (cache_describe).
// pgtest creates and drops databases and migrates its template over a
// direct connection (PGTEST_ADMIN_URL): those need a session of their own.
//
// It is a CI step of its own, `make test-pgbouncer` after `make test`: a
// second run of eight packages' tests, it was about a fifth of make test's
// CPU and took it to 14.8 of its 15 minutes on a slow day.
//
// It stays in package chaos, after the fault tests, rather than in a
// package of its own that go test would run beside them: its eight
// packages' builds and tests beside the fault tests' real waits made one of
// those (an OOM kill that has to come within a minute) miss its time.
func TestSuitesThroughPgBouncer(t *testing.T) {
	runSize(t)
	if os.Getenv("COMPUTE_PGBOUNCER_SUITES") != "1" {
		t.Skip("the suites through PgBouncer run in `make test-pgbouncer` (COMPUTE_PGBOUNCER_SUITES=1), which .ci/run runs after make test")
	}
	pg := startPostgres(t)
	direct := pg.URL("postgres")
	viaBouncer := testenv.StartPgBouncer(t, pg.Port(), direct) + "&default_query_exec_mode=cache_describe"

	args := append([]string{"test", "-count=1", "-timeout", "8m", "-skip", "^(" + suitesSkip + ")"}, suites...)
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "DATABASE_URL="+viaBouncer, "PGTEST_ADMIN_URL="+direct)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s through PgBouncer: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("FIGURES suites-through-pgbouncer: %d packages passed in %.0fs\n%s", len(suites), time.Since(start).Seconds(), out)
}

// startPostgres starts a PostgreSQL of the suites' own, stopped and removed
// when it ends. Fast (no fsync): nothing here crashes it, and the suites
// write a lot.
func startPostgres(t *testing.T) *cluster.Cluster {
	t.Helper()
	// Not t.TempDir: its parents are closed to the postgres OS user, which
	// must enter the cluster's directory.
	dir, err := os.MkdirTemp("", "compute-pgbouncer-suites-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	pg, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "pg"), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pg.Stop(); err != nil {
			t.Errorf("stop postgres: %v", err)
		}
	})
	return pg
}
