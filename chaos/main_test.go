package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bettercompute/compute/internal/pg/cluster"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// size is how hard a run pushes. The CI size keeps `make test` a couple of
// minutes longer at most; COMPUTE_CHAOS=full is what docs/reliability.md
// quotes.
type size struct {
	name        string
	kills       int           // SIGKILLs of the server in the kill loop
	pgDown      time.Duration // how long PostgreSQL stays crashed
	longTx      time.Duration // how long the long transaction stays open
	throughput  time.Duration // each API throughput sample of the multi-process test
	linRounds   int           // independent histories checked for linearizability
	linOpsPerCl int           // operations per client and round
	assignOps   int           // random books, releases, instance starts and agent restarts
}

var (
	ciSize   = size{name: "ci", kills: 20, pgDown: 3 * time.Second, longTx: 4 * time.Second, throughput: 4 * time.Second, linRounds: 5, linOpsPerCl: 12, assignOps: 30}
	fullSize = size{name: "full", kills: 100, pgDown: 30 * time.Second, longTx: 30 * time.Second, throughput: 15 * time.Second, linRounds: 30, linOpsPerCl: 20, assignOps: 300}
)

// runSize picks the size and skips under -short: these tests start real
// processes and a durable PostgreSQL, which -short runs are meant to avoid.
func runSize(t *testing.T) size {
	t.Helper()
	if testing.Short() {
		t.Skip("fault tests start processes and a durable PostgreSQL; skipped with -short")
	}
	if os.Getenv("COMPUTE_CHAOS") == "full" {
		return fullSize
	}
	return ciSize
}

// fullSizeOnly skips a probe that runs for minutes of real time unless
// the run is the full one (make chaos): what it proves is covered in make
// test by a faster test, and make test stays well under its budget.
func fullSizeOnly(t *testing.T, why string) {
	t.Helper()
	if runSize(t) != fullSize {
		t.Skip("runs in the full fault run only (COMPUTE_CHAOS=full, make chaos): it " + why)
	}
}

// shared is what every test of the package reuses: one compute binary and
// one PostgreSQL cluster, both made on first use so that -short runs pay
// for neither.
var shared struct {
	binOnce sync.Once
	bin     string
	binErr  error

	pgOnce  sync.Once
	cluster *cluster.Cluster
	pgErr   error

	tmp string
}

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "compute-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The postgres OS user must be able to enter the cluster directory.
	_ = os.Chmod(tmp, 0o755)
	shared.tmp = tmp
	code := m.Run()
	if shared.cluster != nil {
		if err := shared.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop postgres:", err)
		}
	}
	_ = os.RemoveAll(tmp)
	os.Exit(code)
}

// computeBinary builds ./cmd/compute once per test run, without -race: the
// processes under test should run at production speed.
func computeBinary(t *testing.T) string {
	t.Helper()
	shared.binOnce.Do(func() {
		out := filepath.Join(shared.tmp, "compute")
		cmd := exec.Command("go", "build", "-o", out, "github.com/bettercompute/compute/cmd/compute")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			shared.binErr = fmt.Errorf("go build: %w\n%s", err, b)
			return
		}
		shared.bin = out
	})
	if shared.binErr != nil {
		t.Fatal(shared.binErr)
	}
	return shared.bin
}

// sharedCluster starts the package's PostgreSQL on first use. It is durable
// (not the cluster package's Fast mode): the kill loop crashes it and counts on fsync.
func sharedCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	shared.pgOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		shared.cluster, shared.pgErr = cluster.Start(ctx, cluster.Options{Dir: filepath.Join(shared.tmp, "pg")})
	})
	if shared.pgErr != nil {
		t.Fatal(shared.pgErr)
	}
	return shared.cluster
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// freshDatabase creates an empty database named after the test (the service
// migrates it on start) and returns its URL and a pool for the audits.
func freshDatabase(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	c := sharedCluster(t)
	name := "chaos_" + nonIdent.ReplaceAllString(strings.ToLower(t.Name()), "_")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	url := c.URL(name)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return url, pool
}
