package chaos

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/commands"
)

// hostile is an instance that tries to outlive its reservation: it
// ignores SIGTERM, and leaves a setsid child, a double-forked child and a
// child in a process group of its own, each ignoring SIGTERM too.
const hostile = `trap '' TERM; ` +
	`setsid sh -c "trap '' TERM; exec sleep 9901" </dev/null >/dev/null 2>&1 & ` +
	`(sh -c "trap '' TERM; exec sleep 9902" </dev/null >/dev/null 2>&1 &) ; ` +
	`perl -e 'setpgrp(0,0); $SIG{TERM}="IGNORE"; exec "sleep", "9903"' </dev/null >/dev/null 2>&1 & ` +
	`touch started; exec sleep 9904`

// TestWindowEndsWhileTheNodeIsCutOff: with real processes (`compute
// serve`, `compute agent`, runc), hostile instances on two nodes whose
// reservations end while the nodes are cut off from the control plane.
// On n1 (its gateway killed) every process is gone at the end by the
// daemon's own reckoning of the control plane's clock; once the control
// plane is back and has expired the reservation, nothing of the
// allocation is left: no process under its user id, no directory, no
// /work mount, no loop device. On n2 the daemon itself is SIGSTOPped
// across the end: nothing can stop the workload until it is SIGCONTed
// (measured). On n3 the daemon is SIGKILLed before the end and started
// again only after it: the container's keeper ends the workload by itself
// at its deadline (the end plus the stop grace plus a minute).
func TestWindowEndsWhileTheNodeIsCutOff(t *testing.T) {
	fullSizeOnly(t, "waits out a minute's window and the keeper's deadline in real time (about 4 minutes)")
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Minute)
	defer cancel()
	f := newAssignFleet(t, ctx)
	const length = 61 * time.Second // the shortest reservation is a minute
	sim := f.sim.now(ctx)
	end := sim.Add(length)
	type held struct {
		node, alloc, work string
		r                 assignReservation
		endOnNode         time.Time
		uid               int
		in                assignInstance
	}
	var hs []*held
	for _, n := range []string{"n1", "n2", "n3"} {
		r := f.bookWith(n, 0, length, 1024)
		f.awaitAssigned(r)
		h := &held{node: "node-" + n, r: r, alloc: f.allocationOf(r.ID)}
		h.work = filepath.Join(f.wlRoot, n, h.alloc, "work")
		h.in = f.instance(r, hostile)
		waitFor(t, ctx, "the hostile instance's processes running on "+n, 30*time.Second, func() (bool, error) {
			return len(cgroupPIDs(h.node, h.alloc)) >= 5, nil
		})
		h.uid = uidOf(cgroupPIDs(h.node, h.alloc))
		// The daemon judges the window by the control plane's time at its
		// last welcome plus what its own clock measured since.
		h.endOnNode = lastSessionOpen(t, f.agents[n].logPath).Add(end.Sub(sim))
		t.Logf("%s: %d processes of uid %d, /work mounted %v, loop devices %v; ends on the node in %v", n,
			len(cgroupPIDs(h.node, h.alloc)), h.uid, mounted(h.work), loopsOf(filepath.Dir(h.work)), time.Until(h.endOnNode))
		hs = append(hs, h)
	}
	n1, n2, n3 := hs[0], hs[1], hs[2]
	f.agents["n3"].Kill() // its workloads run on, in their own process groups
	frozen := f.agents["n2"].cmd.Process.Pid
	if err := syscall.Kill(frozen, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(frozen, syscall.SIGCONT) })
	f.hub.Kill()
	gone := waitGone(t, ctx, n1.endOnNode.Add(time.Minute), func() bool {
		return len(cgroupPIDs(n1.node, n1.alloc)) == 0 && !uidRuns(n1.uid)
	})
	t.Logf("n1, gateway down: last process gone %v after the end (node's reckoning; the stop grace is %v)",
		gone.Sub(n1.endOnNode), agent.DefaultStopGrace)
	if gone.Before(n1.endOnNode) {
		t.Fatalf("n1 stopped %v before its end", n1.endOnNode.Sub(gone))
	}

	const frozenAfter = 5 * time.Second
	time.Sleep(time.Until(n2.endOnNode.Add(frozenAfter))) // the fault itself: frozen past the end
	ranAfter := len(cgroupPIDs(n2.node, n2.alloc))
	if err := syscall.Kill(frozen, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	gone = waitGone(t, ctx, time.Now().Add(time.Minute), func() bool {
		return len(cgroupPIDs(n2.node, n2.alloc)) == 0 && !uidRuns(n2.uid)
	})
	if ranAfter == 0 {
		t.Fatal("n2's workload did not outlive its end while its daemon was frozen: the probe measured nothing")
	}
	t.Logf("n2, daemon frozen until %v after the end: %d processes still ran then; last gone %v after the end, %v after SIGCONT",
		frozenAfter, ranAfter, gone.Sub(n2.endOnNode), gone.Sub(n2.endOnNode.Add(frozenAfter)))

	gone = waitGone(t, ctx, n3.endOnNode.Add(agent.DefaultStopGrace+2*time.Minute), func() bool {
		return len(cgroupPIDs(n3.node, n3.alloc)) == 0 && !uidRuns(n3.uid)
	})
	t.Logf("n3, no daemon: last process gone %v after the end (keeper deadline: end + %v)", gone.Sub(n3.endOnNode),
		agent.DefaultStopGrace+time.Minute)

	// The control plane comes back, its clock past the end; so does n3's
	// daemon.
	if _, err := f.pool.Exec(ctx, "UPDATE compute_sim_clock SET ts = $1 WHERE id = 1", end.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	if err := f.hub.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f.agents["n3"].Start()
	for _, h := range hs {
		waitFor(t, ctx, "reservation expired and unassigned on "+h.node, time.Minute, func() (bool, error) {
			return f.jobState(h.r.ID, "unassign") == "succeeded", nil
		})
		_, dirErr := os.Lstat(filepath.Dir(h.work))
		loops := loopsOf(filepath.Dir(h.work))
		t.Logf("%s: unassigned %v after the control plane came back; dir left %v, /work mounted %v, loops %v, uid %d runs %v",
			h.node, time.Since(back), dirErr == nil, mounted(h.work), loops, h.uid, uidRuns(h.uid))
		if dirErr == nil || mounted(h.work) || len(loops) > 0 || uidRuns(h.uid) {
			t.Fatalf("%s: something of the allocation is left after its unassign", h.node)
		}
	}
	if left := netnsLeft(); slices.Contains(left, "compute-"+netnsHash("node-n3", n3.alloc)) {
		t.Fatalf("n3's network namespace is left: %v", left)
	}
	// Each instance was stopped because its window ended: by the watchdog
	// on n1 and n2, by the keeper on n3 (reported by the daemon that came
	// back; before, as a failure, "exit status 137").
	for _, h := range hs {
		var in struct {
			State, Reason string
			ExitCode      *int `json:"exitCode"`
		}
		f.must(f.member, "GET", "/v1/instances/"+h.in.ID, "", nil, &in)
		exit := "none"
		if in.ExitCode != nil {
			exit = strconv.Itoa(*in.ExitCode)
		}
		t.Logf("%s: instance %s %s, reason %q, exit code %s", h.node, h.in.ID, in.State, in.Reason, exit)
		if in.State != "stopped" || !strings.Contains(in.Reason, "ended at") {
			t.Errorf("%s: instance %s, reason %q; want stopped at its window's end", h.node, in.State, in.Reason)
		}
	}
}

// TestExtendRacesTheEnd: an extension committed just before the end (but
// no later than commands.ExtendLead before it) reaches the node in time,
// and the workload runs on past the old end; one asked for closer to the
// end, or after it, is refused (CONFLICT) and the workload stops at the
// end.
func TestExtendRacesTheEnd(t *testing.T) {
	fullSizeOnly(t, "waits out a minute's window in real time")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f := newAssignFleet(t, ctx)
	const length = 61 * time.Second
	sim := f.sim.now(ctx)
	end := sim.Add(length)
	type held struct {
		node, alloc string
		r           assignReservation
		endOnNode   time.Time
	}
	var hs []*held
	for _, n := range []string{"n1", "n2"} {
		r := f.bookWith(n, 0, length, 1024)
		f.awaitAssigned(r)
		h := &held{node: "node-" + n, r: r, alloc: f.allocationOf(r.ID)}
		f.instance(r, workload)
		waitFor(t, ctx, "instance running on "+n, 30*time.Second, func() (bool, error) {
			return containerProcess(h.node, h.alloc, "sleep 86400") > 0, nil
		})
		h.endOnNode = lastSessionOpen(t, f.agents[n].logPath).Add(end.Sub(sim))
		hs = append(hs, h)
	}
	n1, n2 := hs[0], hs[1]
	extend := func(h *held, lead time.Duration) error {
		// The control plane's clock, kept with the node's reckoning.
		time.Sleep(time.Until(h.endOnNode.Add(-lead)))
		f.sim.advanceTo(ctx, end.Add(-lead))
		asked := time.Now()
		err := f.member.do(ctx, "POST", f.hub.URL()+"/v1/reservations/"+h.r.ID+"/extend", uuid.NewString(),
			map[string]any{"end": end.Add(time.Hour).Format(time.RFC3339)}, nil)
		t.Logf("%s: extend asked %v before the node's end (control plane: %v before): %v", h.node,
			h.endOnNode.Sub(asked), end.Sub(f.sim.now(ctx)), err)
		return err
	}
	if err := extend(n1, commands.ExtendLead+3*time.Second); err != nil {
		t.Fatal(err)
	}
	acked := waitGone(t, ctx, n1.endOnNode.Add(time.Minute), func() bool {
		var st string
		_ = f.pool.QueryRow(ctx, `SELECT c.state FROM node_commands c JOIN allocations a ON a.id = c.allocation_id
			WHERE a.reservation_id = $1 AND c.kind = 'assign' ORDER BY c.seq DESC LIMIT 1`, n1.r.ID).Scan(&st)
		return st == "succeeded"
	})
	t.Logf("n1: the wider window acknowledged by the node %v before the old end", n1.endOnNode.Sub(acked))
	if err := extend(n2, commands.ExtendLead/2); codeOf(err) != "CONFLICT" {
		t.Fatalf("n2: an extension %v before the end: %v, want CONFLICT", commands.ExtendLead/2, err)
	}
	gone := waitGone(t, ctx, n2.endOnNode.Add(time.Minute), func() bool { return len(cgroupPIDs(n2.node, n2.alloc)) == 0 })
	t.Logf("n2: refused extension; last process gone %v after the end", gone.Sub(n2.endOnNode))
	time.Sleep(time.Until(n1.endOnNode.Add(2 * time.Second)))
	if containerProcess(n1.node, n1.alloc, "sleep 86400") == 0 {
		t.Fatal("n1: the extended reservation's workload was stopped at the old end")
	}
	f.sim.advanceTo(ctx, end.Add(time.Second))
	err := f.member.do(ctx, "POST", f.hub.URL()+"/v1/reservations/"+n2.r.ID+"/extend", uuid.NewString(),
		map[string]any{"end": end.Add(time.Hour).Format(time.RFC3339)}, nil)
	// CONFLICT: "ended at", or "is expired" once the expiry has run.
	if codeOf(err) != "CONFLICT" {
		t.Fatalf("n2: an extension after the end: %v, want CONFLICT", err)
	}
}

// TestReleaseRacesTheAssign: a reservation released while its assign and
// its first instance's container are still being applied on the node
// leaves nothing on the node once the release is acknowledged.
func TestReleaseRacesTheAssign(t *testing.T) {
	runSize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f := newAssignFleet(t, ctx)
	for i := range 4 {
		r := f.bookWith("n3", 0, time.Hour, 1024)
		waitFor(t, ctx, "active", 30*time.Second, func() (bool, error) { return f.state(r.ID) == "active", nil })
		alloc := f.allocationOf(r.ID)
		f.instance(r, hostile)
		delay := time.Duration(i) * 150 * time.Millisecond
		time.Sleep(delay) // where in the assign/start the release lands
		start := time.Now()
		f.must(f.member, "POST", "/v1/reservations/"+r.ID+"/release", uuid.NewString(), map[string]any{}, nil)
		var gone time.Time
		waitFor(t, ctx, "unassigned", time.Minute, func() (bool, error) {
			if len(cgroupPIDs("node-n3", alloc)) == 0 && gone.IsZero() {
				gone = time.Now()
			}
			return f.jobState(r.ID, "unassign") == "succeeded", nil
		})
		acked := time.Now()
		dir := filepath.Join(f.wlRoot, "n3", alloc)
		_, dirErr := os.Lstat(dir)
		netns := netnsLeft()
		t.Logf("release %v after the instance: processes gone %v, unassign acknowledged %v after the release; "+
			"dir %v, mounted %v, loops %v, netns %v", delay, gone.Sub(start), acked.Sub(start), dirErr == nil,
			mounted(filepath.Join(dir, "work")), loopsOf(dir), netns)
		// Anything started after the acknowledgement is a survivor.
		time.Sleep(2 * time.Second)
		if n := len(cgroupPIDs("node-n3", alloc)); n > 0 || dirErr == nil {
			t.Fatalf("release %v after the instance: %d processes, dir left %v", delay, n, dirErr == nil)
		}
	}
}

// TestDaemonKilledBetweenStopAndReport: a daemon SIGKILLed once an
// unassigned allocation's container is gone but before it reported the
// unassign is restarted; the unassign, carried out again, succeeds, and
// nothing of the allocation is left: no directory, no /work mount, no loop
// device, no process and no uid table entry of its user.
func TestDaemonKilledBetweenStopAndReport(t *testing.T) {
	runSize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f := newAssignFleet(t, ctx)
	r, alloc := f.bookAssigned("n1")
	f.instance(r, hostile)
	waitFor(t, ctx, "the hostile instance's processes running", 30*time.Second, func() (bool, error) {
		return len(cgroupPIDs("node-n1", alloc)) >= 5, nil
	})
	uid := uidOf(cgroupPIDs("node-n1", alloc))
	dir := filepath.Join(f.wlRoot, "n1", alloc)
	f.must(f.member, "POST", "/v1/reservations/"+r.ID+"/release", uuid.NewString(), map[string]any{}, nil)
	waitGone(t, ctx, time.Now().Add(time.Minute), func() bool { return len(cgroupPIDs("node-n1", alloc)) == 0 })
	f.agents["n1"].Kill()
	unassign := f.jobState(r.ID, "unassign")
	_, dirErr := os.Lstat(dir)
	t.Logf("killed with the container gone: unassign %q, dir left %v, mounted %v, uid table holds it %v", unassign,
		dirErr == nil, mounted(filepath.Join(dir, "work")), uidHeld(t, f.agents["n1"].stateDir(), alloc))
	restarted := time.Now()
	f.agents["n1"].Start()
	waitFor(t, ctx, "unassign succeeded after the restart", time.Minute, func() (bool, error) {
		return f.jobState(r.ID, "unassign") == "succeeded", nil
	})
	_, dirErr = os.Lstat(dir)
	t.Logf("restarted: unassign succeeded %v later; dir left %v, mounted %v, loops %v, uid %d runs %v, uid table holds it %v",
		time.Since(restarted), dirErr == nil, mounted(filepath.Join(dir, "work")), loopsOf(dir), uid, uidRuns(uid),
		uidHeld(t, f.agents["n1"].stateDir(), alloc))
	if dirErr == nil || mounted(filepath.Join(dir, "work")) || len(loopsOf(dir)) > 0 || uidRuns(uid) ||
		uidHeld(t, f.agents["n1"].stateDir(), alloc) {
		t.Fatal("something of the allocation is left after the restarted daemon's unassign")
	}
}

// uidHeld says whether the machine's uid table holds an id for the
// allocation of the daemon with stateDir.
func uidHeld(t *testing.T, stateDir, alloc string) bool {
	t.Helper()
	b, err := os.ReadFile(agent.DefaultUIDTable)
	if err != nil {
		return false
	}
	entries := map[string]uint32{}
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(stateDir)
	_, ok := entries[abs+"#"+alloc]
	return ok
}

// waitGone polls gone every 5 ms until it holds, and returns when it did.
func waitGone(t *testing.T, ctx context.Context, deadline time.Time, gone func() bool) time.Time {
	t.Helper()
	for !gone() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("still there at %s", deadline)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Now()
}

// lastSessionOpen is when the daemon last read a welcome, from its log.
func lastSessionOpen(t *testing.T, logPath string) time.Time {
	t.Helper()
	fh, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var at time.Time
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Time time.Time
			Msg  string
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "session opened" {
			at = line.Time
		}
	}
	if at.IsZero() {
		t.Fatal("no session opened in " + logPath)
	}
	return at
}

func uidOf(pids []int) int {
	for _, pid := range pids {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
				// Not root (runc's init) nor the container's keeper (nobody).
				if u, _ := strconv.Atoi(f[1]); u != 0 && u != 65534 {
					return u
				}
			}
		}
	}
	return -1
}

func uidRuns(uid int) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, d := range dirs {
		b, _ := os.ReadFile(d)
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" && f[1] == strconv.Itoa(uid) {
				return true
			}
		}
	}
	return false
}

func mounted(dir string) bool {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

func loopsOf(dir string) []string {
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, f := range files {
		if b, _ := os.ReadFile(f); strings.HasPrefix(string(b), dir) {
			out = append(out, f)
		}
	}
	return out
}

// netnsHash is agent's netnsName without its prefix.
func netnsHash(node, alloc string) string {
	sum := sha256.Sum256([]byte(node + "/" + alloc))
	return hex.EncodeToString(sum[:8])
}

func netnsLeft() []string {
	ents, _ := os.ReadDir("/run/netns")
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "compute-") {
			out = append(out, e.Name())
		}
	}
	return out
}
