package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

// testDaemon is a daemon without a control plane: its jobs are handed to
// execute directly, and what it reports on its own lands in reports.
type testDaemon struct {
	*daemon
	t       *testing.T
	ctx     context.Context
	root    string // the workload root
	mu      sync.Mutex
	reports []wire.Message
	seq     int
}

func newTestDaemon(t *testing.T) *testDaemon {
	t.Helper()
	state := t.TempDir()
	root, err := os.MkdirTemp("", "compute-agent-unit-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(root, 0o711))
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	// The daemon's logic, with plain processes; the containers are
	// container_test.go's.
	log := slog.New(slog.DiscardHandler)
	cfg := Config{NodeID: "n1", StateDir: state, WorkloadDir: root, WorkloadIsolation: IsolationNone,
		StopGrace: 300 * time.Millisecond, ResyncEvery: time.Hour, Logger: log}
	j, err := openJournal(state)
	require.NoError(t, err)
	gpus, err := inventoryGPUs(context.Background(), "n1", "2xH100-80GB")
	require.NoError(t, err)
	sb, err := openSandbox(context.Background(), cfg, gpus)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	// The daemon's clock is inside the test assignments' windows (t0).
	td := &testDaemon{daemon: &daemon{cfg: cfg, journal: j, log: log, sandbox: sb, gpus: gpus,
		now: func() time.Time { return t0.Add(time.Minute) }}, t: t, ctx: ctx, root: root}
	td.instances.now = td.windowNow
	td.listen()
	t.Cleanup(func() {
		cancel()
		td.instances.stopWhere(time.Millisecond, true, func(string, string) string { return "test over" })
	})
	return td
}

// listen opens a WebSocket to a recorder as the daemon's current session,
// so that its unsolicited reports are sent for real.
func (td *testDaemon) listen() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		for {
			_, b, err := ws.Read(r.Context())
			if err != nil {
				return
			}
			var m wire.Message
			if json.Unmarshal(b, &m) == nil {
				td.mu.Lock()
				td.reports = append(td.reports, m)
				td.mu.Unlock()
			}
		}
	}))
	td.t.Cleanup(srv.Close)
	ws, _, err := websocket.Dial(td.ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(td.t, err)
	td.t.Cleanup(func() { _ = ws.CloseNow() })
	td.setCurrent(td.ctx, ws)
}

func (td *testDaemon) stoppedReports() []wire.InstanceStopped {
	td.mu.Lock()
	defer td.mu.Unlock()
	var out []wire.InstanceStopped
	for _, m := range td.reports {
		if m.Type == wire.TypeInstanceStopped {
			var p wire.InstanceStopped
			require.NoError(td.t, json.Unmarshal(m.Payload, &p))
			require.Equal(td.t, p.AllocationID, m.AllocationID)
			out = append(out, p)
		}
	}
	return out
}

// job runs one node job through execute, as the session would.
func (td *testDaemon) job(kind, allocationID string, payload any) wire.Message {
	td.t.Helper()
	b, err := json.Marshal(payload)
	require.NoError(td.t, err)
	td.mu.Lock()
	td.seq++
	id := fmt.Sprintf("cmd_%d", td.seq)
	td.mu.Unlock()
	m := wire.Message{Type: wire.TypeCommand, CommandID: id, CommandKind: kind,
		AllocationID: allocationID, Payload: b}
	return td.stamp(m, td.execute(td.ctx, m))
}

func (td *testDaemon) assign(a wire.AssignPayload) wire.Message {
	td.t.Helper()
	return td.job(wire.CommandKindAssign, a.AllocationID, a)
}

func (td *testDaemon) startInstance(alloc, id, script string) wire.Message {
	td.t.Helper()
	return td.job("instance-start", alloc, commandPayload{InstanceID: id, Script: script})
}

func (td *testDaemon) instanceDir(alloc, id string) string {
	return filepath.Join(td.root, alloc, "work", "instances", id)
}

// pidOf waits for the instance's script to write its pid to a file.
func (td *testDaemon) pidOf(alloc, id string) int {
	td.t.Helper()
	var pid int
	require.Eventually(td.t, func() bool {
		b, err := os.ReadFile(filepath.Join(td.instanceDir(alloc, id), "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}, 10*time.Second, 5*time.Millisecond)
	return pid
}

var (
	t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	h  = time.Hour
)

func gpu(uuid string) wire.AssignedDevice {
	return wire.AssignedDevice{ID: uuid, GPU: uuid, Kind: "gpu", Visible: uuid}
}

func slot(uuid string, k int, mode string) wire.AssignedDevice {
	return wire.AssignedDevice{ID: fmt.Sprintf("%s/s%d", uuid, k), GPU: uuid, Kind: "slot", Visible: uuid, Mode: mode}
}

func assignment(alloc string, start, end time.Time, gen int64, devs ...wire.AssignedDevice) wire.AssignPayload {
	return wire.AssignPayload{AllocationID: alloc, ReservationID: "rsv_" + alloc, Devices: devs, VCPU: 2, MemoryMB: 1024,
		DiskGB: 10, Start: start, End: end, Generation: gen}
}

// alive reports whether pid runs (a zombie, waiting for a parent to reap
// it, is dead).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil // no procfs
	}
	_, after, ok := strings.Cut(string(b), ") ")
	return ok && !strings.HasPrefix(after, "Z")
}

// The daemon refuses an assignment that overlaps, in devices and window,
// one it holds for another allocation; windows are half-open; a repeat is
// a success; what is malformed fails without "refused: ".
func TestAssignRefusesOverlaps(t *testing.T) {
	td := newTestDaemon(t)
	a := assignment("alc_a", t0, t0.Add(2*h), 3, gpu("GPU-n1-0"))
	res := td.assign(a)
	require.Equal(t, outcomeSucceeded, res.State, res.Reason)
	require.Equal(t, int64(3), res.ObservedGeneration)

	overlap := td.assign(assignment("alc_b", t0.Add(h), t0.Add(3*h), 4, gpu("GPU-n1-1"), gpu("GPU-n1-0")))
	require.Equal(t, outcomeFailed, overlap.State)
	require.True(t, strings.HasPrefix(overlap.Reason, "refused: "), overlap.Reason)
	require.Contains(t, overlap.Reason, "device GPU-n1-0 is held by another allocation on this node")
	require.NotContains(t, overlap.Reason, "alc_a", "the holder, perhaps another tenant's, stays in the daemon's log")
	require.NotContains(t, overlap.Reason, "2030-01-01T02:00:00Z", "and so does its window")
	require.Equal(t, int64(3), overlap.ObservedGeneration, "a refused assign does not move the generation")

	// A slot of a GPU held whole is the same GPU.
	sliced := td.assign(assignment("alc_c", t0, t0.Add(h), 5, slot("GPU-n1-0", 0, "time-slice")))
	require.True(t, strings.HasPrefix(sliced.Reason, "refused: "), sliced.Reason)

	// [t0, t0+2h) and [t0+2h, ...) do not overlap.
	after := td.assign(assignment("alc_d", t0.Add(2*h), t0.Add(3*h), 6, gpu("GPU-n1-0")))
	require.Equal(t, outcomeSucceeded, after.State, after.Reason)
	// Another device, the same window.
	beside := td.assign(assignment("alc_e", t0, t0.Add(2*h), 7, gpu("GPU-n1-1")))
	require.Equal(t, outcomeSucceeded, beside.State, beside.Reason)

	// A redelivery is a success and writes nothing.
	lines := journalLines(t, td.journal)
	again := td.assign(a)
	require.Equal(t, outcomeSucceeded, again.State, again.Reason)
	require.Equal(t, int64(7), again.ObservedGeneration)
	require.Equal(t, lines, journalLines(t, td.journal))
	// An extension of the same allocation replaces its window, if it is free.
	longer := a
	longer.End, longer.Generation = t0.Add(2*h+30*time.Minute), 8
	refused := td.assign(longer)
	require.True(t, strings.HasPrefix(refused.Reason, "refused: "), "alc_d holds GPU-n1-0 from 2h")
	longer.Devices = []wire.AssignedDevice{gpu("GPU-n1-0")}
	longer.End = t0.Add(2 * h)
	longer.VCPU = 4
	require.Equal(t, outcomeSucceeded, td.assign(longer).State)
	got, ok := td.journal.assignment("alc_a")
	require.True(t, ok)
	require.Equal(t, int64(4), got.VCPU)
	require.Equal(t, int64(8), td.journal.observedGeneration())

	for name, c := range map[string]struct {
		a    wire.AssignPayload
		want string
	}{
		"end before start": {assignment("alc_x", t0.Add(h), t0, 9, gpu("GPU-n1-1")), "end 2030-01-01T00:00:00Z is not after start"},
		"empty window":     {assignment("alc_x", t0, t0, 9, gpu("GPU-n1-1")), "is not after start"},
		"unknown GPU":      {assignment("alc_x", t0, t0.Add(h), 9, gpu("GPU-elsewhere")), "GPU GPU-elsewhere is not one of this node's"},
		"empty device":     {assignment("alc_x", t0, t0.Add(h), 9, wire.AssignedDevice{ID: "GPU-n1-1"}), "id, gpu, kind and visible are required"},
		"bad kind":         {assignment("alc_x", t0, t0.Add(h), 9, wire.AssignedDevice{ID: "x", GPU: "GPU-n1-1", Kind: "tpu", Visible: "GPU-n1-1"}), `unknown kind "tpu"`},
		"bad slot mode":    {assignment("alc_x", t0, t0.Add(h), 9, slot("GPU-n1-1", 0, "shared")), `slot mode "shared"`},
		"twice":            {assignment("alc_x", t0, t0.Add(h), 9, gpu("GPU-n1-1"), gpu("GPU-n1-1")), "appears twice"},
		"nothing":          {wire.AssignPayload{AllocationID: "alc_x", Start: t0, End: t0.Add(h)}, "it assigns nothing"},
		"no allocation":    {assignment("", t0, t0.Add(h), 9, gpu("GPU-n1-1")), "no allocationId"},
	} {
		res := td.assign(c.a)
		require.Equal(t, outcomeFailed, res.State, name)
		require.True(t, strings.HasPrefix(res.Reason, "invalid assignment: "), name+": "+res.Reason)
		require.Contains(t, res.Reason, c.want, name)
	}
	bad := td.job(wire.CommandKindAssign, "alc_x", "not an object")
	require.Contains(t, bad.Reason, "bad assign payload")
	// A CPU-only allocation is an assignment too.
	require.Equal(t, outcomeSucceeded, td.assign(assignment("alc_cpu", t0, t0.Add(h), 9)).State)
}

// Two MIG atoms that the control plane names as one MIG instance (its
// pairing of atoms with instances moved under a live booking: a layout
// reordered by a mode change, a node that re-created its instances) are
// one device: the daemon refuses the second, as it refuses an atom held
// twice, instead of giving two tenants one instance.
func TestAssignRefusesASharedMIGInstance(t *testing.T) {
	td := newTestDaemon(t)
	mig := func(k int, visible string) wire.AssignedDevice {
		return wire.AssignedDevice{ID: fmt.Sprintf("GPU-n1-0/mig-%d", k), GPU: "GPU-n1-0", Kind: "mig", Visible: visible}
	}
	a := td.assign(assignment("alc_a", t0, t0.Add(2*h), 3, mig(0, "MIG-x")))
	require.Equal(t, outcomeSucceeded, a.State, a.Reason)

	shared := td.assign(assignment("alc_b", t0.Add(h), t0.Add(3*h), 4, mig(1, "MIG-x")))
	require.Equal(t, outcomeFailed, shared.State)
	require.True(t, strings.HasPrefix(shared.Reason, "refused: "), shared.Reason)
	require.Contains(t, shared.Reason, "device GPU-n1-0/mig-1 is held by another allocation on this node")

	// Another instance of the same GPU is another device.
	beside := td.assign(assignment("alc_c", t0, t0.Add(2*h), 5, mig(1, "MIG-y")))
	require.Equal(t, outcomeSucceeded, beside.State, beside.Reason)
}

// A GPU is shared one way at a time: a slot of a GPU whose MIG instance is
// held, or an MPS slot beside a time-slice one, is refused as a held GPU
// is (the control plane changes a GPU's mode only with nothing on it, so
// only a stale or forged assignment asks for it). Slots of one mode share
// their GPU.
func TestAssignRefusesAGPUSharedTwoWays(t *testing.T) {
	td := newTestDaemon(t)
	mig := wire.AssignedDevice{ID: "GPU-n1-0/mig-0", GPU: "GPU-n1-0", Kind: "mig", Visible: "MIG-x"}
	require.Equal(t, outcomeSucceeded, td.assign(assignment("alc_a", t0, t0.Add(2*h), 3, mig)).State)
	sliced := td.assign(assignment("alc_b", t0, t0.Add(h), 4, slot("GPU-n1-0", 0, "time-slice")))
	require.Equal(t, outcomeFailed, sliced.State)
	require.Contains(t, sliced.Reason, "device GPU-n1-0/s0 is held by another allocation on this node")

	require.Equal(t, outcomeSucceeded, td.assign(assignment("alc_c", t0, t0.Add(h), 5, slot("GPU-n1-1", 0, "time-slice"))).State)
	mps := td.assign(assignment("alc_d", t0, t0.Add(h), 6, slot("GPU-n1-1", 1, "mps")))
	require.Equal(t, outcomeFailed, mps.State)
	require.True(t, strings.HasPrefix(mps.Reason, "refused: "), mps.Reason)
	neighbour := td.assign(assignment("alc_e", t0, t0.Add(h), 7, slot("GPU-n1-1", 1, "time-slice")))
	require.Equal(t, outcomeSucceeded, neighbour.State, neighbour.Reason)
}

func journalLines(t *testing.T, j *journal) int {
	b, err := os.ReadFile(j.path)
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

// A workload sees exactly its allocation's devices; an operator's job
// without allocation sees none; an allocation not assigned here runs
// nothing.
func TestWorkloadsSeeOnlyTheirDevices(t *testing.T) {
	td := newTestDaemon(t)
	// A whole GPU and two MPS slots of the other: the other GPU is visible
	// once, in device order.
	a := assignment("alc_a", t0, t0.Add(h), 1, gpu("GPU-n1-1"), slot("GPU-n1-0", 0, "mps"), slot("GPU-n1-0", 1, "mps"))
	require.Equal(t, outcomeSucceeded, td.assign(a).State)

	res := td.startInstance("alc_a", "ins_env", `env > env.txt; echo $$ > pid; exec sleep 600`)
	require.Equal(t, outcomeSucceeded, res.State, res.Reason)
	td.pidOf("alc_a", "ins_env")
	env := readEnv(t, filepath.Join(td.instanceDir("alc_a", "ins_env"), "env.txt"))
	require.Equal(t, "GPU-n1-1,GPU-n1-0", env["CUDA_VISIBLE_DEVICES"])
	require.Equal(t, "GPU-n1-1,GPU-n1-0", env["NVIDIA_VISIBLE_DEVICES"])
	require.Equal(t, filepath.Join(td.root, "alc_a", "work", "mps"), env["CUDA_MPS_PIPE_DIRECTORY"])
	require.Equal(t, "alc_a", env["COMPUTE_ALLOCATION_ID"])
	require.DirExists(t, env["CUDA_MPS_PIPE_DIRECTORY"])

	// Exec jobs too; an operator's job without allocation sees no GPU.
	out := td.job("exec", "alc_a", commandPayload{Script: `echo "[$CUDA_VISIBLE_DEVICES]"`})
	require.Equal(t, outcomeSucceeded, out.State, out.Reason)
	require.Equal(t, "[GPU-n1-1,GPU-n1-0]\n", out.Output)
	fleet := td.job("exec", "", commandPayload{Script: `env | grep -E '^(CUDA|NVIDIA)_VISIBLE_DEVICES=' | sort`})
	require.Equal(t, outcomeSucceeded, fleet.State, fleet.Reason)
	require.Equal(t, "CUDA_VISIBLE_DEVICES=\nNVIDIA_VISIBLE_DEVICES=\n", fleet.Output)

	// No assignment, no workload.
	for _, kind := range []string{"exec", "instance-start"} {
		res := td.job(kind, "alc_nobody", commandPayload{Script: "true", InstanceID: "ins_x"})
		require.Equal(t, outcomeFailed, res.State, kind)
		require.Equal(t, "allocation alc_nobody is not assigned to this node", res.Reason, kind)
	}
	require.NoDirExists(t, filepath.Join(td.root, "alc_nobody"))

	// A time-slice slot sees its GPU, without MPS (once the MPS slots are
	// released: a GPU is shared one way at a time).
	un := td.job(wire.CommandKindUnassign, "alc_a", wire.UnassignPayload{AllocationID: "alc_a", Reason: "released", Generation: 2})
	require.Equal(t, outcomeSucceeded, un.State, un.Reason)
	b := assignment("alc_b", t0, t0.Add(h), 3, slot("GPU-n1-0", 2, "time-slice"))
	require.Equal(t, outcomeSucceeded, td.assign(b).State)
	ts := td.job("exec", "alc_b", commandPayload{Script: `echo "[$CUDA_VISIBLE_DEVICES] [${CUDA_MPS_PIPE_DIRECTORY-unset}]"`})
	require.Equal(t, "[GPU-n1-0] [unset]\n", ts.Output)
}

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	require.NoError(t, sc.Err())
	return env
}

// Unassign stops every workload of the allocation (SIGTERM, then SIGKILL
// after the grace), reports each stopped instance, forgets the sandbox,
// journals, and only then succeeds; it leaves other allocations alone and
// is idempotent.
func TestUnassignStopsTheAllocationsWorkloads(t *testing.T) {
	td := newTestDaemon(t)
	require.Equal(t, outcomeSucceeded, td.assign(assignment("alc_a", t0, t0.Add(h), 1, gpu("GPU-n1-0"))).State)
	require.Equal(t, outcomeSucceeded, td.assign(assignment("alc_b", t0, t0.Add(h), 2, gpu("GPU-n1-1"))).State)
	require.Equal(t, outcomeSucceeded, td.startInstance("alc_a", "ins_polite", `echo $$ > pid; exec sleep 600`).State)
	// This one ignores SIGTERM, and so does its child: only SIGKILL ends them.
	require.Equal(t, outcomeSucceeded, td.startInstance("alc_a", "ins_stubborn",
		`trap '' TERM; echo $$ > pid; sh -c 'trap "" TERM; echo $$ > child; while :; do sleep 0.05; done' & wait`).State)
	require.Equal(t, outcomeSucceeded, td.startInstance("alc_b", "ins_other", `echo $$ > pid; exec sleep 600`).State)
	polite, stubborn, other := td.pidOf("alc_a", "ins_polite"), td.pidOf("alc_a", "ins_stubborn"), td.pidOf("alc_b", "ins_other")
	var child int
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(td.instanceDir("alc_a", "ins_stubborn"), "child"))
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return child > 0
	}, 10*time.Second, 5*time.Millisecond)
	// A running exec job of the allocation is stopped too.
	execDone := make(chan wire.Message, 1)
	go func() { execDone <- td.job("exec", "alc_a", commandPayload{Script: "sleep 600"}) }()
	require.Eventually(t, func() bool {
		td.instances.mu.Lock()
		defer td.instances.mu.Unlock()
		return len(td.instances.execs["alc_a"]) == 1
	}, 10*time.Second, 5*time.Millisecond)

	began := time.Now()
	res := td.job(wire.CommandKindUnassign, "alc_a", wire.UnassignPayload{AllocationID: "alc_a", Reason: "released", Generation: 5})
	require.Equal(t, outcomeSucceeded, res.State, res.Reason)
	require.GreaterOrEqual(t, time.Since(began), 300*time.Millisecond, "the stubborn one had its grace")
	require.Equal(t, int64(5), res.ObservedGeneration)
	require.Equal(t, "unassigned alc_a; stopped instances ins_polite, ins_stubborn", res.Output)
	require.False(t, alive(polite), "gone when the unassign succeeds")
	require.False(t, alive(stubborn), "gone when the unassign succeeds")
	// The leader was reaped; its orphaned child was sent SIGKILL with the
	// group, which the kernel delivers as soon as it runs.
	require.Eventually(t, func() bool { return !alive(child) }, 10*time.Second, time.Millisecond,
		"the orphaned child outlived its group's SIGKILL")
	require.True(t, alive(other), "another allocation's instance runs on")
	execRes := <-execDone
	require.Equal(t, outcomeFailed, execRes.State)
	require.Equal(t, "stopped: allocation unassigned: released", execRes.Reason)

	require.Eventually(t, func() bool { return len(td.stoppedReports()) == 2 }, 10*time.Second, 5*time.Millisecond)
	reports := td.stoppedReports()
	require.ElementsMatch(t, []string{"ins_polite", "ins_stubborn"}, []string{reports[0].InstanceID, reports[1].InstanceID})
	require.Equal(t, "alc_a", reports[0].AllocationID)
	require.Equal(t, "allocation unassigned: released", reports[0].Reason)

	_, held := td.journal.assignment("alc_a")
	require.False(t, held)
	require.NoDirExists(t, filepath.Join(td.root, "alc_a"), "the sandbox is forgotten")
	again := td.startInstance("alc_a", "ins_late", "sleep 600")
	require.Equal(t, "allocation alc_a is not assigned to this node", again.Reason)
	require.Equal(t, []wire.RunningInstance{{InstanceID: "ins_other", AllocationID: "alc_b", PID: other}}, td.instances.running())

	// Unassigning what is not held succeeds, and moves the generation.
	unknown := td.job(wire.CommandKindUnassign, "alc_never", wire.UnassignPayload{AllocationID: "alc_never", Generation: 6})
	require.Equal(t, outcomeSucceeded, unknown.State, unknown.Reason)
	require.Equal(t, int64(6), unknown.ObservedGeneration)
	require.Equal(t, outcomeSucceeded, td.job(wire.CommandKindUnassign, "alc_a", wire.UnassignPayload{AllocationID: "alc_a", Generation: 5}).State)
	require.Equal(t, int64(6), td.journal.observedGeneration(), "the highest one applied")

	// The node's state as the inventory message carries it.
	st := td.nodeState()
	require.Equal(t, int64(6), st.ObservedGeneration)
	require.Len(t, st.Assignments, 1)
	require.Equal(t, "alc_b", st.Assignments[0].AllocationID)
	require.Len(t, st.GPUs, 2)
	require.Equal(t, "H100-80GB", st.GPUs[0].Model)
}

// The watchdog stops what outlived its assignment: an allocation no longer
// held, or one whose end has passed by the daemon's clock.
func TestWatchdogStopsWhatOutlivedItsReservation(t *testing.T) {
	td := newTestDaemon(t)
	now := td.now()
	require.Equal(t, outcomeSucceeded, td.assign(assignment("alc_ends", now.Add(-h), now.Add(h), 1, gpu("GPU-n1-0"))).State)
	require.Equal(t, outcomeSucceeded, td.assign(assignment("alc_gone", now.Add(-h), now.Add(3*h), 2, gpu("GPU-n1-1"))).State)
	require.Equal(t, outcomeSucceeded, td.assign(assignment("alc_stays", now.Add(-h), now.Add(3*h), 3)).State)
	require.Equal(t, outcomeSucceeded, td.startInstance("alc_ends", "ins_ends", `echo $$ > pid; exec sleep 600`).State)
	require.Equal(t, outcomeSucceeded, td.startInstance("alc_gone", "ins_gone", `echo $$ > pid; exec sleep 600`).State)
	require.Equal(t, outcomeSucceeded, td.startInstance("alc_stays", "ins_stays", `echo $$ > pid; exec sleep 600`).State)
	require.Equal(t, outcomeSucceeded, td.job("instance-start", "", commandPayload{InstanceID: "ins_ops", Script: "exec sleep 600"}).State)
	ends, gone, stays := td.pidOf("alc_ends", "ins_ends"), td.pidOf("alc_gone", "ins_gone"), td.pidOf("alc_stays", "ins_stays")

	require.Empty(t, td.resync(), "everything is within its assignment")
	// The journal forgets alc_gone without its workloads being stopped (as
	// after a crash between the two); two hours pass.
	require.NoError(t, td.journal.unassign(wire.UnassignPayload{AllocationID: "alc_gone", Generation: 4}))
	td.now = func() time.Time { return now.Add(2 * h) }
	stopped := td.resync()
	require.Equal(t, []stoppedInstance{
		{InstanceID: "ins_ends", AllocationID: "alc_ends", PID: ends,
			Reason: "the assignment of allocation alc_ends ended at " + now.Add(h).UTC().Format(time.RFC3339)},
		{InstanceID: "ins_gone", AllocationID: "alc_gone", PID: gone, Reason: "allocation alc_gone is not assigned to this node"},
	}, stopped)
	require.False(t, alive(ends))
	require.False(t, alive(gone))
	require.True(t, alive(stays))
	require.Eventually(t, func() bool { return len(td.stoppedReports()) == 2 }, 10*time.Second, 5*time.Millisecond)
	running := td.instances.running()
	require.Len(t, running, 2, "the operator's instance (no allocation) and alc_stays' run on")
	require.Equal(t, "ins_ops", running[0].InstanceID)
}

// The watchdog wakes at the next end of a window it holds, not only every
// ResyncEvery: a workload stops at its end even while the control plane
// cannot reach the node. Ends already past, and windows ending beyond
// ResyncEvery, leave it at ResyncEvery; it never sleeps less than
// watchdogMinWait.
func TestWatchdogWakesAtTheNextEnd(t *testing.T) {
	td := newTestDaemon(t) // now is t0 + 1 min, ResyncEvery an hour
	now := td.now()
	require.Equal(t, time.Hour, td.watchdogWait(now), "nothing held")
	require.Equal(t, outcomeSucceeded, td.assign(assignment("alc_late", t0, t0.Add(3*h), 1, gpu("GPU-n1-0"))).State)
	require.Equal(t, time.Hour, td.watchdogWait(now), "its end is beyond ResyncEvery")
	require.Equal(t, outcomeSucceeded, td.assign(assignment("alc_soon", t0, t0.Add(11*time.Minute), 2, gpu("GPU-n1-1"))).State)
	require.Equal(t, 10*time.Minute, td.watchdogWait(now), "the next end")
	require.Equal(t, watchdogMinWait, td.watchdogWait(t0.Add(11*time.Minute-time.Millisecond)), "at least the minimum")
	require.Equal(t, time.Hour, td.watchdogWait(t0.Add(2*h)), "past ends do not count")
}
