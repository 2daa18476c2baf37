package chaos

import (
	"context"
	"math/rand/v2"
	"strconv"
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
func TestNoGPUServesTwoWorkloads(t *testing.T) {
	sz := runSize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	f := newAssignFleet(t, ctx)
	seed := uint64(time.Now().UnixNano())
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
	for i := range sz.assignOps {
		step := ""
		switch op := rng.IntN(10); {
		case op < 5 || len(live) == 0:
			n := nodes[rng.IntN(len(nodes))]
			r := f.book(n)
			step = "book on " + n
			if r.State != "booked" && r.State != "active" {
				// The node is full: the reservation waits, pending, and
				// holds quota; withdraw it so that quota never runs out.
				// (A retry may have placed it meanwhile: then release it.)
				if err := f.member.do(ctx, "POST", f.hub.URL()+"/v1/reservations/"+r.ID+"/cancel", uuid.NewString(), map[string]any{}, nil); err != nil {
					f.must(f.member, "POST", "/v1/reservations/"+r.ID+"/release", uuid.NewString(), map[string]any{}, nil)
				}
				continue
			}
			live = append(live, r)
			// Start a workload once the booking is active and assigned; a
			// daemon being restarted may take longer than the wait, and
			// then the start comes first and fails, which is also a path.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
				if f.state(r.ID) == "active" && f.jobState(r.ID, "assign") == "succeeded" {
					break
				}
				time.Sleep(20 * time.Millisecond) // polling the database, not waiting for time to pass
			}
			var in assignInstance
			_ = f.member.do(ctx, "POST", f.hub.URL()+"/v1/instances", uuid.NewString(),
				map[string]any{"reservationId": r.ID, "command": workload}, &in)
		case op < 8:
			k := rng.IntN(len(live))
			step = "release " + live[k].ID
			f.must(f.member, "POST", "/v1/reservations/"+live[k].ID+"/release", uuid.NewString(), map[string]any{}, nil)
			live = append(live[:k], live[k+1:]...)
		default:
			n := nodes[rng.IntN(len(nodes))]
			step = "restart agent " + n
			f.agents[n].Kill()
			f.agents[n].Start()
		}
		sample(strconv.Itoa(i) + ": " + step)
	}
	for _, r := range live {
		f.must(f.member, "POST", "/v1/reservations/"+r.ID+"/release", uuid.NewString(), map[string]any{}, nil)
	}
	waitFor(t, ctx, "every workload gone after the last release", 2*time.Minute, func() (bool, error) {
		sample("the final releases")
		return len(runningContainers(t, f.wlRoot, names)) == 0, nil
	})
	t.Logf("%d samples of %d running containers in all, no GPU ever allowed to two", samples, seen)
	if seen == 0 {
		t.Fatal("no workload ever ran: the sampling proved nothing")
	}
}
