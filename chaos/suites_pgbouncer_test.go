package chaos

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// suitesThroughPgBouncer are the packages whose tests run through
// PgBouncer: the capacity torture test and the command, projection,
// query, HTTP and webhook integration tests. Packages that LISTEN (outbox,
// events) or start their own servers are left out: LISTEN needs a direct
// connection, which PgBouncer's transaction pooling cannot give.
var suitesThroughPgBouncer = []string{
	"./commands/", "./torture/", "./projections/", "./queries/", "./httpapi/", "./webhook/", "./internal/lease/", "./internal/workqueue/",
}

// TestSuitesThroughPgBouncer runs the integration and torture suites with
// every test connection going through PgBouncer in transaction pooling
// mode (cache_describe), in front of the package's durable cluster.
// pgtest creates and drops databases and migrates its template over a
// direct connection (PGTEST_ADMIN_URL): those need a session of their own.
func TestSuitesThroughPgBouncer(t *testing.T) {
	runSize(t)
	bouncer := findPgBouncer(t)
	c := sharedCluster(t)
	direct := c.URL("postgres")
	viaBouncer := startPgBouncer(t, bouncer, c.Port(), direct) + "&default_query_exec_mode=cache_describe"

	args := append([]string{"test", "-count=1", "-timeout", "8m"}, suitesThroughPgBouncer...)
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "DATABASE_URL="+viaBouncer, "PGTEST_ADMIN_URL="+direct)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s through PgBouncer: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("FIGURES suites-through-pgbouncer: %d packages passed in %.0fs\n%s", len(suitesThroughPgBouncer), time.Since(start).Seconds(), out)
}
