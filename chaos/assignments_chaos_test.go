package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestNoGPUServesTwoWorkloads runs random books, releases, instance starts
// and agent restarts (SIGKILL, then start again) against three real agents,
// and after every step samples the machine itself: every live instance
// process and the GPUs its environment names. No GPU may ever be named by
// two live workloads — 0 allowed — however the control plane's assigns and
// unassigns, the daemons' restarts and the adoptions interleave. At the end
// every reservation is released and every workload must be gone.
//
// Preemption is in the mix (issue 26): some books are of the preemptible
// class batch (grace 1 s), some of whose workloads ignore SIGTERM and are
// killed after the grace, and prod creates displace them, each starting a
// workload as soon as its reservation is assigned. Besides the samples
// after every step, a watcher per node samples all along (nodeWatch): no
// GPU allowed to two running containers at any instant it saw.
func TestNoGPUServesTwoWorkloads(t *testing.T) {
	sz := runSize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// A released workload that ignores SIGTERM is killed after 1 s, not
	// the daemon's default 10 s: the budget stays that of the run.
	f := newAssignFleet(t, ctx, "--stop-grace", "1s")
	f.priorityClasses(time.Second, map[string][]string{tenant: {"batch", "prod"}})
	var watches []*nodeWatch
	for _, n := range []string{"n1", "n2", "n3"} {
		watches = append(watches, watchNode(t, f.wlRoot, n, 10*time.Millisecond))
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("COMPUTE_CHAOS_SEED"), 10, 64); err == nil {
		seed = s // replay a run: its ops, not its timing
	}
	t.Logf("seed %d, %d operations", seed, sz.assignOps)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	nodes := []string{"n1", "n2", "n3"}
	var live []assignReservation
	samples, seen := 0, 0
	names := map[string]string{"node-n1": "n1", "node-n2": "n2", "node-n3": "n3"}
	sample := func(step string) {
		t.Helper()
		samples++
		users := map[string][]string{} // node/GPU minor → the running containers the kernel lets open it
		cs := runningContainers(t, f.wlRoot, names)
		seen += len(cs)
		for _, c := range cs {
			for _, m := range c.minors {
				if m < 0 {
					t.Fatalf("after %s: container %s on %s may open every GPU", step, c.allocation, c.node)
				}
				key := c.node + "/" + strconv.Itoa(m)
				users[key] = append(users[key], c.allocation)
			}
		}
		for gpu, allocs := range users {
			if len(allocs) > 1 {
				t.Fatalf("after %s: GPU %s is allowed to %d running allocations: %v", step, gpu, len(allocs), allocs)
			}
		}
	}
	nodeOf := map[string]string{} // live reservations → their node
	batch := map[string]bool{}    // live reservations → whether of class batch
	var steps []string            // what was done when, for a failure's message
	preemptions := 0
	// book creates a reservation of class on n and, once it is active and
	// assigned, starts command on it; a reservation that does not fit is
	// withdrawn. It says what it did.
	book := func(n, class, command string) string {
		t.Helper()
		r := f.bookAs(f.member, n, class, 2*time.Hour)
		step := "book " + class + " on " + n + ": " + r.ID + " " + r.State + " " + strings.Join(r.DeviceIDs, ",")
		if r.State != "booked" && r.State != "active" {
			// The node is full: the reservation waits, pending, and
			// holds quota; withdraw it so that quota never runs out.
			// (A retry may have placed it meanwhile: then release it.)
			if err := f.member.do(ctx, "POST", f.hub.URL()+"/v1/reservations/"+r.ID+"/cancel", uuid.NewString(), map[string]any{}, nil); err != nil {
				f.must(f.member, "POST", "/v1/reservations/"+r.ID+"/release", uuid.NewString(), map[string]any{}, nil)
			}
			return step
		}
		live = append(live, r)
		nodeOf[r.ID], batch[r.ID] = n, class == "batch"
		// Start a workload once the booking is active and assigned (a
		// preemptor's once its victims are gone); a daemon being
		// restarted may take longer than the wait, and then the start
		// comes first and fails, which is also a path.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			if f.state(r.ID) == "active" && f.jobState(r.ID, "assign") == "succeeded" {
				break
			}
			time.Sleep(20 * time.Millisecond) // polling the database, not waiting for time to pass
		}
		var in assignInstance
		_ = f.member.do(ctx, "POST", f.hub.URL()+"/v1/instances", uuid.NewString(),
			map[string]any{"reservationId": r.ID, "command": command}, &in)
		return step
	}
	release := func(k int) string {
		t.Helper()
		id := live[k].ID
		f.must(f.member, "POST", "/v1/reservations/"+id+"/release", uuid.NewString(), map[string]any{}, nil)
		live = slices.Delete(live, k, k+1)
		return "release " + id
	}
	// settle samples the machine after a step and forgets the
	// reservations preemption ended: there is nothing to release.
	settle := func(i int, step string) {
		t.Helper()
		steps = append(steps, fmt.Sprintf("%s %d: %s", time.Now().Format("15:04:05.000"), i, step))
		sample(strconv.Itoa(i) + ": " + step)
		live = slices.DeleteFunc(live, func(r assignReservation) bool {
			if f.state(r.ID) != "preempted" {
				return false
			}
			preemptions++
			return true
		})
	}
	for i := range sz.assignOps {
		step := ""
		switch op := rng.IntN(10); {
		case op < 4 || len(live) == 0:
			class, command := "", workload
			if rng.IntN(2) == 0 {
				class = "batch"
				if rng.IntN(3) == 0 {
					command = "trap '' TERM; " + workload // killed after the grace
				}
			}
			step = book(nodes[rng.IntN(len(nodes))], class, command)
		case op < 6:
			// prod: on a node with a batch reservation when there is one,
			// a full one first, where it displaces one.
			n := nodes[rng.IntN(len(nodes))]
			booked, batches := map[string]int{}, map[string]int{}
			for _, r := range live {
				booked[nodeOf[r.ID]]++
				if batch[r.ID] {
					batches[nodeOf[r.ID]]++
				}
			}
			for _, m := range nodes {
				if batches[m] > 0 && (batches[n] == 0 || booked[m] > booked[n]) {
					n = m
				}
			}
			step = book(n, "prod", workload)
		case op < 8:
			step = release(rng.IntN(len(live)))
		default:
			n := nodes[rng.IntN(len(nodes))]
			step = "restart agent " + n
			f.agents[n].Kill()
			f.agents[n].Start()
		}
		settle(i, step)
	}
	if preemptions == 0 {
		// The dice displaced nothing: n1 is emptied, filled with batch
		// reservations, one of whose workloads ignores SIGTERM, and a
		// prod one displaces one of them.
		i := sz.assignOps
		for k := len(live) - 1; k >= 0; k-- {
			if nodeOf[live[k].ID] == "n1" {
				settle(i, release(k))
				i++
			}
		}
		for _, step := range []string{book("n1", "batch", workload), book("n1", "batch", "trap '' TERM; "+workload),
			book("n1", "prod", workload)} {
			settle(i, step)
			i++
		}
		if preemptions == 0 {
			t.Fatalf("a prod reservation on a node full of batch ones displaced none:\n%s", strings.Join(steps, "\n"))
		}
	}
	for _, r := range live {
		f.must(f.member, "POST", "/v1/reservations/"+r.ID+"/release", uuid.NewString(), map[string]any{}, nil)
	}
	waitFor(t, ctx, "every workload gone after the last release", 2*time.Minute, func() (bool, error) {
		sample("the final releases")
		return len(runningContainers(t, f.wlRoot, names)) == 0, nil
	})
	watched := 0
	for _, w := range watches {
		w.halt()
		if w.conflict() != "" {
			t.Logf("the steps:\n%s", strings.Join(steps, "\n"))
		}
		w.check(f)
		watched += w.count()
	}
	t.Logf("%d samples of %d running containers in all and %d by the watchers, %d preemptions, no GPU ever allowed to two",
		samples, seen, watched, preemptions)
	if seen == 0 {
		t.Fatal("no workload ever ran: the sampling proved nothing")
	}
}
