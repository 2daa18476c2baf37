package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PgbenchRun is one pgbench measurement on the benchmark's server.
type PgbenchRun struct {
	Mode       string  `json:"mode"` // "simple-update" (-N) or "tpcb"
	Clients    int     `json:"clients"`
	SyncCommit bool    `json:"synchronousCommit"`
	Seconds    int     `json:"seconds"`
	TPS        float64 `json:"tps"`
	LatencyMs  float64 `json:"latencyAvgMs"`
}

// Name is how tables and ratios refer to the run.
func (r PgbenchRun) Name() string {
	n := fmt.Sprintf("pgbench %s c%d", r.Mode, r.Clients)
	if !r.SyncCommit {
		n += " sync-off"
	}
	return n
}

// pgbenchDB is pgbench's own database on the benchmark's server,
// initialised once; its runs are interleaved with ours (see measureAll).
type pgbenchDB struct {
	bin, url string
}

// newPgbench finds pgbench and initialises a database next to the
// application's at the plan's scale.
func newPgbench(ctx context.Context, srv *server, p plan, path string) (*pgbenchDB, error) {
	bin, err := findPgbench(path)
	if err != nil {
		return nil, err
	}
	url, err := srv.freshDatabase(ctx, "pgbench")
	if err != nil {
		return nil, err
	}
	if err := pgbenchInit(ctx, bin, url, p.pgbenchScale); err != nil {
		return nil, err
	}
	return &pgbenchDB{bin: bin, url: url}, nil
}

// run is one timed pgbench run; a nil receiver (pgbench unavailable)
// reports why instead.
func (b *pgbenchDB) run(ctx context.Context, mode string, clients int, sync bool, phase time.Duration) (PgbenchRun, error) {
	if b == nil {
		return PgbenchRun{}, errors.New("pgbench was not initialised (see the first gap)")
	}
	return pgbenchRun(ctx, b.bin, b.url, mode, clients, sync, phase)
}

// findPgbench prefers an explicit path, then PATH, then the newest Debian
// PostgreSQL install (pgbench is not on PATH in Debian's packaging).
func findPgbench(path string) (string, error) {
	if path != "" {
		return path, nil
	}
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(found) == 0 {
		return "", errors.New("pgbench not found on PATH or under /usr/lib/postgresql/*/bin (install postgresql-contrib or the server package)")
	}
	slices.SortFunc(found, func(a, b string) int { return majorOf(b) - majorOf(a) })
	return found[0], nil
}

func majorOf(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

func pgbenchInit(ctx context.Context, bin, url string, scale int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	_, err := runPgbench(ctx, bin, nil, "-i", "-q", "-s", strconv.Itoa(scale), url)
	return err
}

var (
	tpsLine     = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)
	latencyLine = regexp.MustCompile(`(?m)^latency average = ([0-9.]+) ms`)
)

// pgbenchRun runs pgbench for the phase length (rounded up to whole
// seconds, pgbench's unit) with two threads, as the 2-core machine has.
func pgbenchRun(ctx context.Context, bin, url, mode string, clients int, syncCommit bool, phase time.Duration) (PgbenchRun, error) {
	secs := max(1, int(math.Ceil(phase.Seconds())))
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+2*time.Minute)
	defer cancel()
	args := []string{"-c", strconv.Itoa(clients), "-j", "2", "-T", strconv.Itoa(secs)}
	if mode == "simple-update" {
		args = append(args, "-N")
	}
	var env []string
	if !syncCommit {
		env = []string{"PGOPTIONS=-c synchronous_commit=off"}
	}
	out, err := runPgbench(ctx, bin, env, append(args, url)...)
	if err != nil {
		return PgbenchRun{}, err
	}
	r := PgbenchRun{Mode: mode, Clients: clients, SyncCommit: syncCommit, Seconds: secs}
	m := tpsLine.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("pgbench %s: no tps in output:\n%s", mode, out)
	}
	r.TPS, _ = strconv.ParseFloat(m[1], 64)
	if m := latencyLine.FindStringSubmatch(out); m != nil {
		r.LatencyMs, _ = strconv.ParseFloat(m[1], 64)
	}
	return r, nil
}

// runPgbench runs pgbench with the caller's PG* variables removed: they
// describe whatever server the caller's shell points at, not ours.
func runPgbench(ctx context.Context, bin string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PG") })
	cmd.Env = append(cmd.Env, env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return buf.String(), fmt.Errorf("pgbench %s: %w\n%s", strings.Join(args[:len(args)-1], " "), err, tail(buf.String(), 2000))
	}
	return buf.String(), nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
