package chaos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// nodeWatch samples one node's containers all along (this test's, see
// runningContainers): which allocations have processes (any, runc's own
// included) and which GPUs the kernel lets each container that runs a
// workload open. Each sample reads the
// node twice; a container with processes in both reads had them at every
// instant between, so the containers of both reads ran together at the
// instant between the reads, and a GPU allowed to two of them is a real
// overlap, not an artefact of reading one container after another.
type nodeWatch struct {
	node, short, wlRoot string
	stop, done          chan struct{}
	once                sync.Once

	mu          sync.Mutex
	samples     int
	first, last map[string]int       // allocation → first and last sample it had processes in
	lastAt      map[string]time.Time // allocation → when the last sample that saw its processes was taken
	overlap     string
	overlapping []string // the allocations of the first overlap
}

// watchNode samples node-<short> every period until the test ends or halt.
func watchNode(t *testing.T, wlRoot, short string, period time.Duration) *nodeWatch {
	w := &nodeWatch{node: "node-" + short, short: short, wlRoot: wlRoot, stop: make(chan struct{}),
		done: make(chan struct{}), first: map[string]int{}, last: map[string]int{}, lastAt: map[string]time.Time{}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
				w.sample()
			}
		}
	}()
	t.Cleanup(w.halt)
	return w
}

func (w *nodeWatch) halt() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

// containerView is an allocation of the node with processes: whether one
// runs past runc's set-up, and the GPU minors its container may open then.
type containerView struct {
	started bool
	minors  []int
}

// read is the node's allocations with processes, by allocation.
func (w *nodeWatch) read() map[string]containerView {
	out := map[string]containerView{}
	dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(procsFile(w.node, "x"))), "*"))
	for _, dir := range dirs {
		alloc := filepath.Base(dir)
		pids := cgroupPIDs(w.node, alloc)
		if len(pids) == 0 || !ours(w.wlRoot, w.short, alloc) {
			continue
		}
		v := containerView{started: started(pids)}
		if v.started {
			if cgroupV2() {
				v.minors = specMinors(filepath.Join(w.wlRoot, w.short, alloc, "config.json"))
			} else {
				v.minors = listMinors(filepath.Join(cgroupRoot, "devices", "compute", w.node, alloc, "devices.list"))
			}
		}
		out[alloc] = v
	}
	return out
}

func (w *nodeWatch) sample() {
	a, b := w.read(), w.read()
	at := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples++
	users := map[int][]string{}
	for alloc, v := range b {
		if va, ok := a[alloc]; ok && va.started && v.started {
			for _, m := range v.minors {
				users[m] = append(users[m], alloc)
			}
		}
	}
	for m, allocs := range users {
		if (m < 0 || len(allocs) > 1) && w.overlap == "" {
			var procs []string
			for _, alloc := range allocs {
				for _, pid := range cgroupPIDs(w.node, alloc) {
					b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
					procs = append(procs, fmt.Sprintf("%s %d %q", alloc, pid, b))
				}
			}
			w.overlap = fmt.Sprintf("sample %d at %s: GPU %s/%d (-1: every GPU) is allowed to %v at once; their processes now: %v",
				w.samples, time.Now().Format("15:04:05.000"), w.node, m, allocs, procs)
			w.overlapping = allocs
		}
	}
	for _, view := range []map[string]containerView{a, b} {
		for alloc := range view {
			if _, ok := w.first[alloc]; !ok {
				w.first[alloc] = w.samples
			}
			w.last[alloc] = w.samples
			w.lastAt[alloc] = at
		}
	}
}

// conflict is the first GPU found allowed to two containers at once, or "".
func (w *nodeWatch) conflict() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.overlap
}

// check fails the test at the first GPU found allowed to two containers
// at once, with what the control plane and the daemon recorded of them.
func (w *nodeWatch) check(f *assignFleet) {
	f.t.Helper()
	w.mu.Lock()
	overlap, allocs := w.overlap, w.overlapping
	w.mu.Unlock()
	if overlap != "" {
		f.t.Fatalf("%s\n%s", overlap, f.explain(w.short, allocs))
	}
}

// explain is what the database and node n's journal say of allocations:
// their reservations and node jobs, for a failure's message.
func (f *assignFleet) explain(n string, allocs []string) string {
	var b strings.Builder
	for _, a := range allocs {
		var res, state, class string
		var devices []string
		var released *time.Time
		_ = f.pool.QueryRow(f.ctx, `SELECT r.id, r.state, r.priority_class, a.device_ids, a.released_at
			FROM allocations a JOIN reservations r ON r.id = a.reservation_id WHERE a.id = $1`, a).
			Scan(&res, &state, &class, &devices, &released)
		fmt.Fprintf(&b, "allocation %s: reservation %s %s (class %s), devices %v, released %v\n", a, res, state, class, devices, released)
		rows, err := f.pool.Query(f.ctx, `SELECT seq, kind, state, payload::text, reason, output FROM node_commands
			WHERE allocation_id = $1 ORDER BY seq`, a)
		if err != nil {
			continue
		}
		for rows.Next() {
			var seq int64
			var kind, st, payload, reason, output string
			if rows.Scan(&seq, &kind, &st, &payload, &reason, &output) == nil {
				fmt.Fprintf(&b, "  job %d %s %s reason %q output %q payload %.300s\n", seq, kind, st, reason, output, payload)
			}
		}
		rows.Close()
	}
	if j, err := os.ReadFile(filepath.Join(f.agents[n].stateDir(), "journal.jsonl")); err == nil {
		for _, line := range strings.Split(string(j), "\n") {
			for _, a := range allocs {
				if strings.Contains(line, a) && !strings.Contains(line, `"kind":"command"`) {
					fmt.Fprintf(&b, "journal of %s: %.400s\n", n, line)
					break
				}
			}
		}
	}
	return b.String()
}

func (w *nodeWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples
}

// lastSeen is when the last sample that saw a process of alloc was taken.
func (w *nodeWatch) lastSeen(alloc string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastAt[alloc]
}

// before says whether every sample that saw a process of allocation gone
// came before the first that saw one of next.
func (w *nodeWatch) before(gone, next string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	lg, okG := w.last[gone]
	fn, okN := w.first[next]
	switch {
	case !okG || !okN:
		return errors.New("the watcher never saw the victim's or the preemptor's container")
	case lg >= fn:
		return fmt.Errorf("the victim's container %s had processes until sample %d, the preemptor's %s from sample %d",
			gone, lg, next, fn)
	}
	return nil
}
