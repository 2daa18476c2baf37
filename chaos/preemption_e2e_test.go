package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Workloads of the preemption test; each appends "<what> <unix ns>" lines
// to ./log, which the test copies as it grows (workloadLog): the
// allocation's directory goes with its unassign, and its /work is a file
// system the release unmounts, which a file held open would keep busy.
const (
	// termExits records the SIGTERM it gets and exits.
	termExits = `echo start $(date +%s%N) >> log; trap 'echo term $(date +%s%N) >> log; exit 0' TERM; sleep 86400 & wait`
	// termIgnored records the SIGTERM it gets and goes on, beating every
	// 0.1 s until it is killed: its last beat is a lower bound of the kill.
	termIgnored = `echo start $(date +%s%N) >> log; trap 'echo term $(date +%s%N) >> log' TERM; ` +
		`while :; do echo beat $(date +%s%N) >> log; sleep 0.1; done`
	// preemptorWorkload records when it started.
	preemptorWorkload = `echo start $(date +%s%N) >> log; exec sleep 86400`
)

// preemptionGrace is the batch class's grace in the end-to-end test.
const preemptionGrace = 2 * time.Second

// TestPreemptionStopsTheVictimFirst is issue 26's preemption checked on
// the machine, with real processes: node-n1 has three fake GPUs, booked
// whole by three batch reservations (preemptible, grace 2 s) of tenant
// globex, each with a running workload. acme then creates prod
// reservations on the node, one at a time, and starts a workload on each
// as soon as the API accepts one.
//
//  1. The first prod reservation displaces the batch one that ends first,
//     whose workload exits at SIGTERM. The victim's workload got SIGTERM;
//     every process and the container of its allocation are gone before
//     any process of the preemptor's exists (a watcher samples the node's
//     cgroups all along), the daemon journaled the victim's unassign
//     before the preemptor's assign, and no GPU was ever allowed to two
//     containers. The preemptor's workload opens its GPU and gets EPERM on
//     the two others. The other victims' workloads are untouched.
//  2. The second displaces the next, whose workload ignores SIGTERM: it
//     beats on for the class's grace after the SIGTERM (not killed
//     before), is then killed, and the preemptor's workload starts only
//     after its last beat, at least the grace after the SIGTERM.
func TestPreemptionStopsTheVictimFirst(t *testing.T) {
	runSize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f := newAssignFleet(t, ctx, "--fake-gpus", "3xH100-80GB")
	globex := f.priorityClasses(preemptionGrace, map[string][]string{"globex": {"batch"}, tenant: {"prod"}})
	w := watchNode(t, f.wlRoot, "n1", 5*time.Millisecond)

	// Three batch reservations fill the node; the one that ends first is
	// the first to go, then the next.
	var victims []*workloadRun
	for i, script := range []string{termExits, termIgnored, termExits} {
		r := f.bookAs(globex, "n1", "batch", time.Duration(i+1)*time.Hour)
		if r.State != "booked" && r.State != "active" {
			t.Fatalf("batch reservation %d is %s", i, r.State)
		}
		f.awaitAssigned(r)
		victims = append(victims, f.startWorkload(globex, "n1", r, script))
	}
	pids := make([]int, len(victims))
	for i, v := range victims {
		pids[i] = v.pid()
		if pids[i] == 0 {
			t.Fatalf("victim %d's workload has no process", i)
		}
	}
	untouched := func(i int, when string) {
		t.Helper()
		v := victims[i]
		if p := v.pid(); p != pids[i] {
			t.Fatalf("%s: batch workload %d's process is %d, was %d", when, i, p, pids[i])
		}
		if l := v.log.read(t); len(l["term"]) > 0 {
			t.Fatalf("%s: batch workload %d got SIGTERM", when, i)
		}
		var in assignInstance
		f.must(globex, "GET", "/v1/instances/"+v.inst.ID, "", nil, &in)
		if in.State != "running" || f.state(v.res.ID) != "active" {
			t.Fatalf("%s: batch workload %d is %s, its reservation %s", when, i, in.State, f.state(v.res.ID))
		}
	}

	// 1. The victim exits at SIGTERM.
	p1, p1run := f.preempt(victims[0])
	l0 := victims[0].log.read(t)
	lp1 := p1run.log.read(t)
	if len(l0["term"]) == 0 {
		t.Fatal("the victim's workload got no SIGTERM")
	}
	if lp1["start"][0] <= l0["term"][0] {
		t.Fatalf("the preemptor's workload started (%d) before the victim's got SIGTERM (%d)", lp1["start"][0], l0["term"][0])
	}
	f.victimGone(w, victims[0], p1run, globex)
	// It exited at SIGTERM: its container went without waiting out the grace.
	if gone := w.lastSeen(victims[0].alloc).Sub(time.Unix(0, l0["term"][0])); gone >= preemptionGrace {
		t.Fatalf("the container of a victim that exits at SIGTERM was there %v after it: the grace was waited out", gone)
	}
	// The preemptor opens its GPU and no other, whatever is in its /dev.
	mine := gpuMinor(t, p1)
	keeper := keeperProcess("node-n1", p1run.alloc)
	if keeper == 0 {
		t.Fatal("no container for the preemptor's allocation")
	}
	for m := range 3 {
		_ = syscall.Mknod(fmt.Sprintf("/proc/%d/root/dev/nvidia%d", keeper, m), syscall.S_IFCHR|0o666, nvidiaMajor<<8|m)
	}
	out, _ := f.exec("n1", p1run.alloc, `unset CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES
for d in 0 1 2; do head -c1 /dev/nvidia$d >/dev/null 2>err; echo "$d $(sed 's/.*: //' err)"; done`)
	want := ""
	for m := range 3 {
		if m == mine {
			want += fmt.Sprintf("%d No such device or address\n", m)
		} else {
			want += fmt.Sprintf("%d Operation not permitted\n", m)
		}
	}
	if out != want {
		t.Fatalf("the preemptor's GPU probe:\n%s\nwant:\n%s", out, want)
	}
	untouched(1, "after the first preemption")
	untouched(2, "after the first preemption")

	// 2. The victim ignores SIGTERM: killed after the grace, not before.
	_, p2run := f.preempt(victims[1])
	l1 := victims[1].log.read(t)
	lp2 := p2run.log.read(t)
	if len(l1["term"]) == 0 || len(l1["beat"]) == 0 {
		t.Fatalf("the victim's log has no SIGTERM or no beat: %v", l1)
	}
	term, last := l1["term"][0], slices.Max(l1["beat"])
	alive := time.Duration(last - term)
	waited := time.Duration(lp2["start"][0] - term)
	t.Logf("victim 1: last beat %v after SIGTERM; preemptor's workload started %v after it", alive, waited)
	// The beats come every 0.1 s plus a fork or two: the last one before
	// the kill is well within half a second of it.
	if alive < preemptionGrace-500*time.Millisecond {
		t.Fatalf("the victim that ignores SIGTERM beat only %v after it: killed before its %v grace", alive, preemptionGrace)
	}
	if waited < preemptionGrace {
		t.Fatalf("the preemptor's workload started %v after the victim's SIGTERM, within its %v grace", waited, preemptionGrace)
	}
	if lp2["start"][0] <= last {
		t.Fatalf("the preemptor's workload started (%d) before the victim's last beat (%d)", lp2["start"][0], last)
	}
	if alive > preemptionGrace+15*time.Second {
		t.Fatalf("the victim beat %v after SIGTERM: not killed after its %v grace", alive, preemptionGrace)
	}
	f.victimGone(w, victims[1], p2run, globex)
	untouched(2, "after the second preemption")
	var in assignInstance
	f.must(f.member, "GET", "/v1/instances/"+p1run.inst.ID, "", nil, &in)
	if in.State != "running" || containerProcess("node-n1", p1run.alloc, "sleep 86400") == 0 {
		t.Fatalf("the first preemptor's workload is %s after the second preemption", in.State)
	}
	w.halt()
	w.check(f)
	t.Logf("%d samples of node-n1, no GPU ever allowed to two containers", w.count())
}

// priorityClasses creates batch (-100, preemptible, the grace given) and
// prod (1000), and sets the tenants' allow-lists; a tenant other than the
// fleet's member gets a member token and quota, whose client is returned
// (nil when there is none).
func (f *assignFleet) priorityClasses(grace time.Duration, allowed map[string][]string) *client {
	f.t.Helper()
	f.must(f.op, "POST", "/v1/priority-classes", uuid.NewString(), map[string]any{"name": "batch", "value": -100,
		"preemptible": true, "graceSeconds": int(grace / time.Second)}, nil)
	f.must(f.op, "POST", "/v1/priority-classes", uuid.NewString(), map[string]any{"name": "prod", "value": 1000}, nil)
	var other *client
	for tn, classes := range allowed {
		if tn != tenant {
			other = newClient(createToken(f.t, f.dbURL, tn, tn+"-member", "member"))
			for res, max := range map[string]int64{"gpu": 16, "vcpu": 1 << 20, "memory": 1 << 30, "disk": 1 << 30} {
				f.must(f.op, "PUT", "/v1/tenants/"+tn+"/quotas/"+res, "", map[string]any{"max": max}, nil)
			}
		}
		f.must(f.op, "PUT", "/v1/tenants/"+tn+"/priority-classes", "", map[string]any{"classes": classes}, nil)
	}
	return other
}

// bookAs reserves, as c, one GPU of node n in class from now until now+to.
func (f *assignFleet) bookAs(c *client, n, class string, to time.Duration) assignReservation {
	f.t.Helper()
	now := f.sim.now(f.ctx)
	body := map[string]any{"poolId": "pool-" + n, "gpus": 1, "gpuModel": "H100-80GB", "vcpu": 1, "memoryMb": 1024,
		"diskGb": 1, "start": now.Format(time.RFC3339), "end": now.Add(to).Format(time.RFC3339)}
	if class != "" {
		body["priorityClass"] = class
	}
	var r assignReservation
	f.must(c, "POST", "/v1/reservations", uuid.NewString(), body, &r)
	return r
}

// workloadRun is an instance running on a node, with its log held open.
type workloadRun struct {
	node, alloc string
	res         assignReservation
	inst        assignInstance
	log         *workloadLog
}

// pid is the host pid of the workload's shell in its container (0 when
// there is none): of the processes whose command line is its
// `sh -c <script>`, the one whose parent is not (the others are the
// shell's short-lived forks for $(date) or a background job).
func (w *workloadRun) pid() int {
	node := "node-" + w.node
	for _, pid := range cgroupPIDs(node, w.alloc) {
		if isWorkloadShell(pid) && !isWorkloadShell(parentOf(pid)) {
			return pid
		}
	}
	return 0
}

func isWorkloadShell(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && strings.HasPrefix(strings.ReplaceAll(string(b), "\x00", " "), "/bin/sh -c echo start")
}

// parentOf is a process's parent pid, or 0.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// startWorkload creates, as c, an instance of script on r as soon as the
// API accepts one (it refuses while r is not active yet), waits until it
// runs, and opens its log.
func (f *assignFleet) startWorkload(c *client, n string, r assignReservation, script string) *workloadRun {
	f.t.Helper()
	var in assignInstance
	waitFor(f.t, f.ctx, "an instance of "+r.ID+" accepted", 60*time.Second, func() (bool, error) {
		err := c.do(f.ctx, "POST", f.hub.URL()+"/v1/instances", uuid.NewString(),
			map[string]any{"reservationId": r.ID, "command": script}, &in)
		if statusOf(err) == 409 {
			return false, nil // not active yet
		}
		return err == nil, err
	})
	waitFor(f.t, f.ctx, "instance "+in.ID+" running", 60*time.Second, func() (bool, error) {
		if err := c.do(f.ctx, "GET", f.hub.URL()+"/v1/instances/"+in.ID, "", nil, &in); err != nil {
			return false, err
		}
		if in.State == "failed" {
			return false, fmt.Errorf("instance failed: %s", in.Reason)
		}
		return in.State == "running", nil
	})
	w := &workloadRun{node: n, alloc: f.allocationOf(r.ID), res: r, inst: in}
	path := filepath.Join(f.wlRoot, n, w.alloc, "work", "instances", in.ID, "log")
	w.log = followLog(f.t, path)
	waitFor(f.t, f.ctx, "the log of instance "+in.ID, 10*time.Second, func() (bool, error) {
		return len(w.log.read(f.t)["start"]) > 0, nil
	})
	return w
}

// preempt creates, as the fleet's member, a prod reservation on victim's
// node, checks that it displaced exactly victim, and starts
// preemptorWorkload on it as soon as it can. It returns once that
// workload runs and its log says so.
func (f *assignFleet) preempt(victim *workloadRun) (assignReservation, *workloadRun) {
	f.t.Helper()
	r := f.bookAs(f.member, victim.node, "prod", 2*time.Hour)
	if r.State != "booked" && r.State != "active" {
		f.t.Fatalf("the prod reservation is %s, want it placed by preemption", r.State)
	}
	if st := f.state(victim.res.ID); st != "preempted" {
		f.t.Fatalf("the victim %s is %s, want preempted", victim.res.ID, st)
	}
	if !slices.Equal(r.DeviceIDs, victim.res.DeviceIDs) {
		f.t.Fatalf("the preemptor holds %v, want the victim's %v", r.DeviceIDs, victim.res.DeviceIDs)
	}
	var grace *int
	if err := f.pool.QueryRow(f.ctx, `SELECT (c.payload->>'graceSeconds')::int FROM node_commands c
		WHERE c.allocation_id = $1 AND c.kind = 'unassign'`, victim.alloc).Scan(&grace); err != nil {
		f.t.Fatal(err)
	}
	if grace == nil || time.Duration(*grace)*time.Second != preemptionGrace {
		f.t.Fatalf("the victim's unassign carries grace %v, want %v", grace, preemptionGrace)
	}
	return r, f.startWorkload(f.member, victim.node, r, preemptorWorkload)
}

// victimGone checks, once the preemptor's workload runs, that nothing of
// the victim's allocation is left, that it was gone before anything of the
// preemptor's was on the node (the watcher's samples), and that the
// daemon journaled the victim's unassign before the preemptor's assign.
// The victim's instance ends stopped.
func (f *assignFleet) victimGone(w *nodeWatch, victim, preemptor *workloadRun, c *client) {
	f.t.Helper()
	if pids := cgroupPIDs("node-"+victim.node, victim.alloc); len(pids) != 0 {
		f.t.Fatalf("the victim's cgroup still has processes %v while the preemptor's workload runs", pids)
	}
	if _, err := os.Stat(filepath.Join(f.wlRoot, victim.node, victim.alloc)); !os.IsNotExist(err) {
		f.t.Fatalf("the victim's allocation directory is still there: %v", err)
	}
	out, err := exec.Command("runc", "--root", filepath.Join(f.agents[victim.node].stateDir(), "runc"), "list", "--quiet").Output()
	if err != nil {
		f.t.Fatal(err)
	}
	if slices.Contains(strings.Fields(string(out)), victim.alloc) {
		f.t.Fatalf("the victim's container %s is still there", victim.alloc)
	}
	if err := w.before(victim.alloc, preemptor.alloc); err != nil {
		f.t.Fatal(err)
	}
	un, unAt := journalIndex(f.t, f.agents[victim.node].stateDir(), "unassign", victim.alloc)
	as, asAt := journalIndex(f.t, f.agents[victim.node].stateDir(), "assign", preemptor.alloc)
	if un < 0 || as < 0 || un > as {
		f.t.Fatalf("the daemon's journal has the victim's unassign at line %d and the preemptor's assign at %d", un, as)
	}
	if term := victim.log.read(f.t)["term"]; len(term) > 0 {
		t0 := time.Unix(0, term[0])
		f.t.Logf("after the victim's SIGTERM: its last process seen at +%v, its unassign journaled at +%v, the preemptor's "+
			"assign at +%v, its workload started at +%v", w.lastSeen(victim.alloc).Sub(t0), unAt.Sub(t0), asAt.Sub(t0),
			time.Unix(0, preemptor.log.read(f.t)["start"][0]).Sub(t0))
	}
	waitFor(f.t, f.ctx, "the victim's instance stopped", 30*time.Second, func() (bool, error) {
		var in assignInstance
		err := c.do(f.ctx, "GET", f.hub.URL()+"/v1/instances/"+victim.inst.ID, "", nil, &in)
		return in.State == "stopped", err
	})
}

// journalIndex is the line of the daemon's journal that records kind for
// the allocation, and when the daemon wrote it; -1 when there is none.
func journalIndex(t *testing.T, stateDir, kind, alloc string) (int, time.Time) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stateDir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		var e struct {
			Kind, AllocationID string
			At                 time.Time
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Kind == kind && e.AllocationID == alloc {
			return i, e.At
		}
	}
	return -1, time.Time{}
}

// workloadLog is a workload's log as the host last read it. It is read
// again every few milliseconds, each time opened and closed, so that the
// test never holds the allocation's /work busy, and what was read stays
// once the release deleted it. The kill is followed by the deletion of the
// container, then of its file system, which take far longer than a poll:
// a victim's last lines are read before they go (the test's bounds allow
// half a second besides).
type workloadLog struct {
	mu      sync.Mutex
	content []byte
}

// followLog copies the file at path into a workloadLog until the test ends.
func followLog(t *testing.T, path string) *workloadLog {
	l := &workloadLog{}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if b, err := os.ReadFile(path); err == nil {
				l.mu.Lock()
				if len(b) >= len(l.content) {
					l.content = b
				}
				l.mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return l
}

// read parses the log's "<what> <unix ns>" lines; a line whose time is
// missing (its date was killed) is skipped.
func (l *workloadLog) read(t *testing.T) map[string][]int64 {
	t.Helper()
	l.mu.Lock()
	content := l.content
	l.mu.Unlock()
	out := map[string][]int64{}
	sc := bufio.NewScanner(bytes.NewReader(content))
	for sc.Scan() {
		what, ns, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if n, err := strconv.ParseInt(ns, 10, 64); ok && err == nil {
			out[what] = append(out[what], n)
		}
	}
	return out
}
