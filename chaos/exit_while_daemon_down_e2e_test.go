package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestInstanceExitsWhileItsDaemonIsDown: with real processes (`compute
// serve`, `compute agent` under runc), an instance whose process exits
// while its node's daemon is SIGKILLed and not restarted yet (a daemon
// upgrade) ends with its exit status once the daemon is back: exit 3 is
// `failed`, exit code 3, reason `exit status 3`; exit 0 `succeeded`. Not
// `lost`, which the restarted daemon's first inventory, no longer listing
// it, would make it if the daemon did not report how it ended first.
func TestInstanceExitsWhileItsDaemonIsDown(t *testing.T) {
	runSize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := newAssignFleet(t, ctx)
	r, alloc := f.bookAssigned("n1")
	type instance struct {
		ID, State, Reason string
		ExitCode          *int32 `json:"exitCode"`
	}
	for _, c := range []struct {
		code   int32
		state  string
		reason string
	}{{3, "failed", "exit status 3"}, {0, "succeeded", "exit status 0"}} {
		var in instance
		f.must(f.member, "POST", "/v1/instances", uuid.NewString(), map[string]any{"reservationId": r.ID,
			"command": fmt.Sprintf("touch started; until [ -e go ]; do sleep 0.05; done; exit %d", c.code)}, &in)
		get := func() error { return f.member.do(ctx, "GET", f.hub.URL()+"/v1/instances/"+in.ID, "", nil, &in) }
		dir := filepath.Join(f.wlRoot, "n1", alloc, "work", "instances", in.ID)
		waitFor(t, ctx, "instance "+in.ID+" running", 30*time.Second, func() (bool, error) {
			_, err := os.Stat(filepath.Join(dir, "started"))
			return in.State == "running" && err == nil, get()
		})
		f.agents["n1"].Kill()
		// It exits while no daemon runs: its shell writes its status to
		// its exit file in the allocation's directory.
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "its exit status written", 30*time.Second, func() (bool, error) {
			exits, err := filepath.Glob(filepath.Join(f.wlRoot, "n1", alloc, "process-*.exit"))
			for _, e := range exits {
				if b, _ := os.ReadFile(e); strings.TrimSpace(string(b)) == fmt.Sprint(c.code) {
					return true, err
				}
			}
			return false, err
		})
		// The daemon comes back a second later (by the simulated clock,
		// which the control plane's judges by): its session opens after
		// the instance last changed, so its first inventory judges it at
		// once.
		f.sim.advanceTo(ctx, f.sim.now(ctx).Add(time.Second))
		f.agents["n1"].Start()
		waitFor(t, ctx, "instance "+in.ID+" ended", 30*time.Second, func() (bool, error) {
			return in.State != "running", get()
		})
		if in.State != c.state || in.Reason != c.reason || in.ExitCode == nil || *in.ExitCode != c.code {
			code := "none"
			if in.ExitCode != nil {
				code = fmt.Sprint(*in.ExitCode)
			}
			t.Fatalf("exit %d while the daemon was down: %s, reason %q, exit code %s; want %s, %q, %d",
				c.code, in.State, in.Reason, code, c.state, c.reason, c.code)
		}
	}
}

// TestInstanceExitReportOutlivesADaemonKilledBeforeItsSession: the same
// with the daemon killed twice, its gateway unreachable in between.
// The daemon that came back first found the instance's process gone and
// made its report, but opened no session to send it on (the gateway was
// down) before it was killed too. The report was kept on disk, not only in
// that daemon's memory: the daemon after sends it on its first session,
// and the instance ends `failed` with exit code 3, not `lost`.
func TestInstanceExitReportOutlivesADaemonKilledBeforeItsSession(t *testing.T) {
	runSize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := newAssignFleet(t, ctx)
	r, alloc := f.bookAssigned("n1")
	var in struct {
		ID, State, Reason string
		ExitCode          *int32 `json:"exitCode"`
	}
	f.must(f.member, "POST", "/v1/instances", uuid.NewString(), map[string]any{"reservationId": r.ID,
		"command": "touch started; until [ -e go ]; do sleep 0.05; done; exit 3"}, &in)
	get := func() error { return f.member.do(ctx, "GET", f.hub.URL()+"/v1/instances/"+in.ID, "", nil, &in) }
	dir := filepath.Join(f.wlRoot, "n1", alloc, "work", "instances", in.ID)
	waitFor(t, ctx, "instance "+in.ID+" running", 30*time.Second, func() (bool, error) {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return in.State == "running" && err == nil, get()
	})
	agent := f.agents["n1"]
	agent.Kill()
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "its exit status written", 30*time.Second, func() (bool, error) {
		exits, err := filepath.Glob(filepath.Join(f.wlRoot, "n1", alloc, "process-*.exit"))
		for _, e := range exits {
			if b, _ := os.ReadFile(e); strings.TrimSpace(string(b)) == "3" {
				return true, err
			}
		}
		return false, err
	})
	// Its daemon's next session opens a second later by the simulated
	// clock, after the instance last changed: its first inventory judges
	// the instance at once.
	f.sim.advanceTo(ctx, f.sim.now(ctx).Add(time.Second))
	// The gateway is unreachable from the node (the daemon is given a
	// port nobody listens on): the daemon that comes back makes its report
	// with no session to send it on, and is killed too.
	args := agent.args
	agent.args = slices.Clone(args)
	agent.args[slices.Index(args, "--gateway")+1] = "ws://" + freeAddr(t)
	logStart := fileSize(t, agent.logPath)
	agent.Start()
	waitFor(t, ctx, "the end reported with no session open", 30*time.Second, func() (bool, error) {
		return strings.Contains(tailFrom(agent.logPath, logStart), "no session to report on"), nil
	})
	agent.Kill()
	agent.args = args
	agent.Start()
	waitFor(t, ctx, "instance "+in.ID+" ended", 60*time.Second, func() (bool, error) {
		return in.State != "running", get()
	})
	if in.State != "failed" || in.Reason != "exit status 3" || in.ExitCode == nil || *in.ExitCode != 3 {
		code := "none"
		if in.ExitCode != nil {
			code = fmt.Sprint(*in.ExitCode)
		}
		t.Fatalf("exit 3 with its daemon killed twice: %s, reason %q, exit code %s; want failed, %q, 3",
			in.State, in.Reason, code, "exit status 3")
	}
}

// fileSize is the size of the file at path (0 when there is none yet).
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
