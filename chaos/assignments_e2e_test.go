package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/internal/pg/migrate"
	"github.com/bettercompute/compute/internal/testenv"
)

// TestReservationsReachTheMachine is issue 12's end-to-end check with real
// processes: `compute serve` and three `compute agent` processes with fake
// GPUs, each in a pool of its own.
//
//  1. A booking reaches its node: an instance's environment names exactly
//     the allocation's GPUs, and releasing the reservation stops the
//     process and the instance.
//  2. A daemon SIGKILLed while the unassign is in flight leaves its
//     instance running; restarted, it adopts the instance and the system
//     converges: the process is gone, the instance stopped, the unassign
//     acknowledged.
//  3. An assignment the control plane does not know, planted in a stopped
//     daemon's journal on GPUs booked meanwhile (the node of a database
//     restored to an earlier point): when the daemon comes back, the
//     control plane unassigns it first, and only then sends the booking's
//     assign, which the daemon would have refused while it held the GPUs.
//     The reservation becomes active. (The daemon's refusal of an
//     overlapping assign is agent/TestAssign…'s and commands' to show.)
//  4. A booking that starts later reaches its node at its start: nothing
//     is sent before, its activation assigns it, and its workload then
//     sees its GPU.
func TestReservationsReachTheMachine(t *testing.T) {
	runSize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := newAssignFleet(t, ctx)

	// 1. The workload sees exactly its GPUs, and stops with its reservation.
	r1 := f.book("n1")
	in1, pid1, dir1 := f.startInstance("n1", r1)
	env, err := os.ReadFile(filepath.Join(dir1, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var r1Now assignReservation
	f.must(f.member, "GET", "/v1/reservations/"+r1.ID, "", nil, &r1Now)
	for _, name := range []string{"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"} {
		got := envValue(string(env), name)
		if len(r1Now.DeviceIDs) != 1 || got != strings.Join(r1Now.DeviceIDs, ",") {
			t.Fatalf("%s = %q, want the reservation's devices %v", name, got, r1Now.DeviceIDs)
		}
	}
	f.must(f.member, "POST", "/v1/reservations/"+r1.ID+"/release", uuid.NewString(), map[string]any{}, nil)
	f.stopped(in1, pid1)
	waitFor(t, ctx, "unassign acknowledged", 30*time.Second, func() (bool, error) {
		return f.jobState(r1.ID, "unassign") == "succeeded", nil
	})

	// 2. The daemon dies while the unassign is in flight; its workload
	// outlives it, and its successor stops it.
	r2 := f.book("n2")
	in2, pid2, _ := f.startInstance("n2", r2)
	f.must(f.member, "POST", "/v1/reservations/"+r2.ID+"/release", uuid.NewString(), map[string]any{}, nil)
	f.agents["n2"].Kill()
	f.agents["n2"].Start()
	f.stopped(in2, pid2)
	waitFor(t, ctx, "unassign acknowledged after the restart", 30*time.Second, func() (bool, error) {
		return f.jobState(r2.ID, "unassign") == "succeeded", nil
	})

	// 3. An assignment planted in a stopped daemon's journal, on the GPUs a
	// booking takes meanwhile: the unknown allocation is unassigned before
	// the booking's assign goes, so the booking reaches the node.
	f.agents["n3"].Kill()
	plantAssignment(t, filepath.Join(f.agents["n3"].stateDir(), "journal.jsonl"), "alc_planted",
		[]string{"GPU-node-n3-0", "GPU-node-n3-1"})
	r3 := f.book("n3")
	f.agents["n3"].Start()
	f.awaitAssigned(r3)
	var plantedUnassign string
	if err := f.pool.QueryRow(ctx, `SELECT state FROM node_commands WHERE node_id = 'node-n3' AND kind = 'unassign'
		AND idempotency_key LIKE '%alc_planted%' ORDER BY seq DESC LIMIT 1`).Scan(&plantedUnassign); err != nil {
		t.Fatalf("no unassign of the planted allocation: %v", err)
	}
	if plantedUnassign != "succeeded" {
		t.Fatalf("the planted allocation's unassign is %q, want succeeded", plantedUnassign)
	}

	// 4. Booked ten seconds ahead: the daemon hears of it at its start.
	later := f.bookWith("n1", 10*time.Second, 2*time.Hour, 1024)
	if st, job := f.state(later.ID), f.jobState(later.ID, "assign"); st != "booked" || job != "" {
		t.Fatalf("a booking for later: state %q, assign job %q; want booked and none", st, job)
	}
	f.sim.advanceTo(ctx, f.sim.now(ctx).Add(10*time.Second))
	f.awaitAssigned(later)
	in4, pid4, dir4 := f.startInstance("n1", later)
	env, err = os.ReadFile(filepath.Join(dir4, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var laterNow assignReservation
	f.must(f.member, "GET", "/v1/reservations/"+later.ID, "", nil, &laterNow)
	if got := envValue(string(env), "CUDA_VISIBLE_DEVICES"); len(laterNow.DeviceIDs) != 1 || got != laterNow.DeviceIDs[0] {
		t.Fatalf("CUDA_VISIBLE_DEVICES = %q, want the reservation's devices %v", got, laterNow.DeviceIDs)
	}
	f.must(f.member, "POST", "/v1/reservations/"+later.ID+"/release", uuid.NewString(), map[string]any{}, nil)
	f.stopped(in4, pid4)
}

// assignFleet is `compute serve` and three `compute agent` processes with
// two fake GPUs each, node-n<i> alone in pool-n<i>, and a member with quota.
type assignFleet struct {
	t          *testing.T
	ctx        context.Context
	pool       *pgxpool.Pool
	sim        *simClock
	hub        *server
	op, member *client
	wlRoot     string
	dbURL      string
	agents     map[string]*agentProc
}

type assignReservation struct {
	ID, State string
	DeviceIDs []string `json:"deviceIds"`
}

type assignInstance struct{ ID, State, Reason string }

// newAssignFleet starts the fleet and waits until the three daemons are
// connected. agentArgs are appended to every daemon's arguments (a later flag wins:
// "--fake-gpus", "3xH100-80GB" gives each node three GPUs).
func newAssignFleet(t *testing.T, ctx context.Context, agentArgs ...string) *assignFleet {
	t.Helper()
	testenv.Require(t, os.Geteuid() == 0, "the agents' workload isolation needs root")
	testenv.Program(t, "runc", "", "runc")
	testenv.Program(t, "bridge", "/usr/lib/cni/bridge", "containernetworking-plugins") // node n3's pool is bridge-mode
	dbURL, pool := freshDatabase(t)
	if err := migrate.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "SELECT compute_use_sim_clock(true)"); err != nil {
		t.Fatal(err)
	}
	f := &assignFleet{t: t, ctx: ctx, pool: pool, dbURL: dbURL, sim: &simClock{t: t, pool: pool}, agents: map[string]*agentProc{}}
	f.hub = newServer(t, "assign-main", dbURL, "api,worker,dispatcher,gateway")
	if err := f.hub.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f.op = newClient(createToken(t, dbURL, "ops", "assign-operator", "operator"))
	f.member = newClient(createToken(t, dbURL, tenant, "assign-member", "member"))
	f.must(f.op, "POST", "/v1/sites", "", map[string]any{"id": "assign-site", "name": "Assign site"}, nil)
	for res, max := range map[string]int64{"gpu": 16, "vcpu": 1 << 20, "memory": 1 << 30, "disk": 1 << 30} {
		f.must(f.op, "PUT", "/v1/tenants/"+tenant+"/quotas/"+res, "", map[string]any{"max": max}, nil)
	}
	// Workload directories every workload user can reach (t.TempDir is
	// not traversable by other users).
	wlRoot, err := os.MkdirTemp("", "compute-e2e-workloads-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(wlRoot) })
	if err := os.Chmod(wlRoot, 0o711); err != nil {
		t.Fatal(err)
	}
	f.wlRoot = wlRoot
	for _, n := range []string{"n1", "n2", "n3"} {
		pool := map[string]any{"id": "pool-" + n, "siteId": "assign-site", "kind": "bare-metal"}
		if n == "n3" {
			pool["workloadNetwork"] = "bridge" // its allocations get a network of their own (CNI)
		}
		f.must(f.op, "POST", "/v1/pools", "", pool, nil)
		var jt struct{ Token string }
		f.must(f.op, "POST", "/v1/nodes/node-"+n+"/join-tokens", "", map[string]any{}, &jt)
		f.agents[n] = newAgent(t, "node-"+n, "pool-"+n, jt.Token, f.hub.URL(), f.hub,
			append([]string{"--workload-dir", filepath.Join(wlRoot, n), "--vcpu", "16", "--memory-mb", "65536"}, agentArgs...)...)
		f.agents[n].Start()
	}
	waitFor(t, ctx, "three nodes connected", 30*time.Second, func() (bool, error) {
		for _, n := range []string{"n1", "n2", "n3"} {
			if s := sessionOf(ctx, pool, "node-"+n); !s.Connected {
				return false, nil
			}
		}
		return true, nil
	})
	return f
}

func (f *assignFleet) must(c *client, method, path, key string, body, out any) {
	f.t.Helper()
	if err := c.do(f.ctx, method, f.hub.URL()+path, key, body, out); err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
}

// book reserves one GPU of node n for two hours from now.
func (f *assignFleet) book(n string) assignReservation {
	f.t.Helper()
	now := f.sim.now(f.ctx)
	var r assignReservation
	f.must(f.member, "POST", "/v1/reservations", uuid.NewString(), map[string]any{"poolId": "pool-" + n, "gpus": 1,
		"gpuModel": "H100-80GB", "vcpu": 1, "memoryMb": 1024, "diskGb": 1,
		"start": now.Format(time.RFC3339), "end": now.Add(2 * time.Hour).Format(time.RFC3339)}, &r)
	return r
}

// bookAssigned books one GPU of node n (book), waits until the reservation
// is active and its node acknowledged the assign (awaitAssigned), and
// returns it with its allocation's id: where every test that starts
// workloads on a node begins.
func (f *assignFleet) bookAssigned(n string) (assignReservation, string) {
	f.t.Helper()
	r := f.book(n)
	f.awaitAssigned(r)
	return r, f.allocationOf(r.ID)
}

func (f *assignFleet) state(id string) string {
	var st string
	_ = f.pool.QueryRow(f.ctx, "SELECT state FROM reservations WHERE id = $1", id).Scan(&st)
	return st
}

// jobState is the state of the newest node job of kind for the
// reservation's allocation.
func (f *assignFleet) jobState(resID, kind string) string {
	var st string
	_ = f.pool.QueryRow(f.ctx, `SELECT c.state FROM node_commands c JOIN allocations a ON a.id = c.allocation_id
		WHERE a.reservation_id = $1 AND c.kind = $2 ORDER BY c.seq DESC LIMIT 1`, resID, kind).Scan(&st)
	return st
}

func (f *assignFleet) allocationOf(resID string) string {
	var id string
	if err := f.pool.QueryRow(f.ctx, "SELECT id FROM allocations WHERE reservation_id = $1", resID).Scan(&id); err != nil {
		f.t.Fatal(err)
	}
	return id
}

// workload is the command of every instance here: it records what it was
// given and waits.
const workload = "env > env.txt; exec sleep 86400"

// startInstance starts an instance on r once r is active and assigned, and
// returns it running, with its process id and directory on the node.
func (f *assignFleet) startInstance(n string, r assignReservation) (assignInstance, int, string) {
	f.t.Helper()
	f.awaitAssigned(r)
	var in assignInstance
	f.must(f.member, "POST", "/v1/instances", uuid.NewString(), map[string]any{"reservationId": r.ID,
		"command": workload}, &in)
	waitFor(f.t, f.ctx, "instance "+in.ID+" running", 30*time.Second, func() (bool, error) {
		if err := f.member.do(f.ctx, "GET", f.hub.URL()+"/v1/instances/"+in.ID, "", nil, &in); err != nil {
			return false, err
		}
		if in.State == "failed" {
			return false, fmt.Errorf("instance failed: %s", in.Reason)
		}
		return in.State == "running", nil
	})
	alloc := f.allocationOf(r.ID)
	dir := filepath.Join(f.wlRoot, n, alloc, "work", "instances", in.ID)
	var pid int
	waitFor(f.t, f.ctx, "instance's process in its container", 10*time.Second, func() (bool, error) {
		pid = containerProcess("node-"+n, alloc, "sleep 86400")
		_, err := os.Stat(filepath.Join(dir, "env.txt"))
		return err == nil && pid > 0, nil
	})
	return in, pid, dir
}

// stopped waits until the instance is stopped and its process gone.
func (f *assignFleet) stopped(in assignInstance, pid int) {
	f.t.Helper()
	waitFor(f.t, f.ctx, "instance "+in.ID+" stopped and its process gone", 60*time.Second, func() (bool, error) {
		if err := f.member.do(f.ctx, "GET", f.hub.URL()+"/v1/instances/"+in.ID, "", nil, &in); err != nil {
			return false, err
		}
		return in.State == "stopped" && syscall.Kill(pid, 0) != nil, nil
	})
}

// envValue is the value of name in `env` output.
func envValue(env, name string) string {
	for _, line := range strings.Split(env, "\n") {
		if v, ok := strings.CutPrefix(line, name+"="); ok {
			return v
		}
	}
	return ""
}

// plantAssignment appends to a stopped daemon's journal an assignment of
// devices to an allocation the control plane never made, for a window
// around now: what a daemon would hold after a bug or a tampered disk.
func plantAssignment(t *testing.T, journal, allocationID string, devices []string) {
	t.Helper()
	var devs []map[string]string
	for _, d := range devices {
		devs = append(devs, map[string]string{"id": d, "gpu": d, "kind": "gpu", "visible": d})
	}
	now := time.Now().UTC()
	line, err := json.Marshal(map[string]any{"seq": 1 << 30, "kind": "assign", "allocationId": allocationID,
		"deviceIds": devices, "at": now, "assignment": map[string]any{"allocationId": allocationID, "devices": devs,
			"start": now.Add(-24 * time.Hour), "end": now.Add(365 * 24 * time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(journal, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
}
