package chaos

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"context"

	"github.com/google/uuid"
)

// TestWorkloadsInRealIsolation is the tenant's promise checked on the
// machine, with real processes: `compute serve`, root `compute agent`
// daemons with fake GPUs (character devices the kernel guards as real
// ones), real runc. Everything a tenant does goes through the API.
//
//   - A workload holding one GPU opens it (ENXIO: allowed, no driver) and
//     gets EPERM on every other GPU of its node, even with the device node
//     in its /dev and CUDA_VISIBLE_DEVICES unset.
//   - It sees no process of another allocation, and reaches no TCP server
//     on the node's loopback (the control plane's API included).
//   - It cannot start more processes than its pids limit.
//   - Beyond its memory it is OOM-killed: the instance fails with reason
//     OOMKilled, while another allocation's workload runs on.
//   - An instance that exits is succeeded or failed with its exit code.
//   - A stopped instance's processes are all gone, setsid ones too.
//   - A setsid grandchild is gone after the release, and the next
//     allocation on the GPU finds nothing of the previous one.
//   - An instance on a reservation that starts tomorrow is refused (409).
func TestWorkloadsInRealIsolation(t *testing.T) {
	runSize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f := newAssignFleet(t, ctx)

	r1 := f.bookWith("n1", 0, 2*time.Hour, 1024)
	r2 := f.bookWith("n1", 0, 2*time.Hour, 1024)
	alloc1 := f.allocationOf(r1.ID)
	f.awaitAssigned(r1)
	f.awaitAssigned(r2)

	// The node's loopback has a server: nothing of the tenant may reach it.
	accepted, port := loopbackServer(t)
	apiPort := f.hub.URL()[strings.LastIndex(f.hub.URL(), ":")+1:]

	// An instance of the other allocation, whose command line a nosy
	// neighbour would like to read.
	bystander, _, _ := f.startInstance("n1", r2)

	out, code := f.exec("n1", alloc1, "id -u")
	if code != 0 {
		t.Fatalf("first exec: %d %s", code, out)
	}
	uid1 := strings.TrimSpace(out)
	if uid1 == "0" || uid1 == "" {
		t.Fatalf("the workload runs as %q, not a user of its own", uid1)
	}
	// Root on the host puts every GPU's node into the container's /dev,
	// as a workload that found its way to them would have them.
	keeper := keeperProcess("node-n1", alloc1)
	if keeper == 0 {
		t.Fatal("no container for the allocation")
	}
	mine := gpuMinor(t, r1)
	for m := 0; m < 2; m++ {
		_ = syscall.Mknod(fmt.Sprintf("/proc/%d/root/dev/nvidia%d", keeper, m), syscall.S_IFCHR|0o666, 195<<8|m)
	}
	out, _ = f.exec("n1", alloc1, `unset CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES
for d in 0 1; do head -c1 /dev/nvidia$d >/dev/null 2>err; echo "$d $(sed 's/.*: //' err)"; done
cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' ' | grep -c 'sleep 8640[0]'
bash -c 'echo > /dev/tcp/127.0.0.1/`+strconv.Itoa(port)+`' 2>/dev/null && echo node:reached || echo node:refused
bash -c 'echo > /dev/tcp/127.0.0.1/`+apiPort+`' 2>/dev/null && echo api:reached || echo api:refused`)
	want := ""
	for m := 0; m < 2; m++ {
		if m == mine {
			want += fmt.Sprintf("%d No such device or address\n", m)
		} else {
			want += fmt.Sprintf("%d Operation not permitted\n", m)
		}
	}
	want += "0\nnode:refused\napi:refused\n"
	if out != want {
		t.Fatalf("isolation probe:\n%s\nwant:\n%s", out, want)
	}
	if accepted.Load() != 0 {
		t.Fatal("the node's loopback server accepted a tenant's connection")
	}

	// Exit codes and the OOM killer, through instances.
	ok := f.instance(r1, "exit 0")
	bad := f.instance(r1, "exit 3")
	// tail -c keeps what it read: 1.5 GB against a 1 GiB limit. The
	// pipeline's last process is the one killed, so sh exits 137.
	hog := f.instance(r1, `head -c 1500000000 /dev/zero | tail -c 1500000000 >/dev/null`)
	f.awaitInstance(ok.ID, "succeeded", "", 0)
	f.awaitInstance(bad.ID, "failed", "exit status 3", 3)
	f.awaitInstance(hog.ID, "failed", "OOMKilled", 137)
	var by assignInstance
	f.must(f.member, "GET", "/v1/instances/"+bystander.ID, "", nil, &by)
	if by.State != "running" {
		t.Fatalf("the other allocation's instance is %s after the OOM kill", by.State)
	}

	// A stopped instance takes every process it started with it, a setsid
	// one and a twice-forked one too; another allocation's instance runs on.
	tree := f.instance(r1, `setsid sh -c 'exec sleep 6661' </dev/null >/dev/null 2>&1 & `+
		`(sh -c 'exec sleep 6662' </dev/null >/dev/null 2>&1 &); exec sleep 6663`)
	waitFor(t, ctx, "the instance's three processes", time.Minute, func() (bool, error) {
		return hostProcess("sleep 6661") != 0 && hostProcess("sleep 6662") != 0 && hostProcess("sleep 6663") != 0, nil
	})
	f.must(f.member, "DELETE", "/v1/instances/"+tree.ID, "", nil, nil)
	waitFor(t, ctx, "instance "+tree.ID+" stopped", time.Minute, func() (bool, error) {
		var in assignInstance
		err := f.member.do(ctx, "GET", f.hub.URL()+"/v1/instances/"+tree.ID, "", nil, &in)
		return err == nil && in.State == "stopped", err
	})
	if pid := hostProcess("sleep 666"); pid != 0 {
		t.Fatalf("process %d of the stopped instance survived it", pid)
	}
	f.must(f.member, "GET", "/v1/instances/"+bystander.ID, "", nil, &by)
	if by.State != "running" {
		t.Fatalf("the other allocation's instance is %s after the stop", by.State)
	}

	// Nothing survives the release.
	out, code = f.exec("n1", alloc1, `setsid sh -c 'exec sleep 7777' </dev/null >/dev/null 2>&1 &
(sh -c 'sleep 7778 >/dev/null 2>&1 &' &); echo secret > /tmp/left; echo secret > /dev/shm/left; echo secret > /work/left; echo ok`)
	if code != 0 {
		t.Fatalf("survivor setup: %d %s", code, out)
	}
	// The exec returns when its shell exits; the background shells it
	// forked may not have reached their sleeps yet on a loaded machine.
	waitFor(t, ctx, "the survivors to start", time.Minute, func() (bool, error) {
		return hostProcess("sleep 7777") != 0 && hostProcess("sleep 7778") != 0, nil
	})
	f.must(f.member, "POST", "/v1/reservations/"+r1.ID+"/release", uuid.NewString(), map[string]any{}, nil)
	waitFor(t, ctx, "unassign acknowledged", 60*time.Second, func() (bool, error) {
		return f.jobState(r1.ID, "unassign") == "succeeded", nil
	})
	if pid := hostProcess("sleep 777"); pid != 0 {
		t.Fatalf("process %d of the released allocation survived", pid)
	}
	if len(cgroupPIDs("node-n1", alloc1)) != 0 {
		t.Fatal("the released allocation's cgroup still has processes")
	}
	if _, err := os.Stat(filepath.Join(f.wlRoot, "n1", alloc1)); !os.IsNotExist(err) {
		t.Fatalf("the released allocation's directory is still there: %v", err)
	}
	r3 := f.bookWith("n1", 0, 2*time.Hour, 1024)
	f.awaitAssigned(r3)
	out, code = f.exec("n1", f.allocationOf(r3.ID), `ls -A /tmp /dev/shm /work; cat /proc/[0-9]*/cmdline | tr '\0' ' ' | grep -c 'sleep 777[78]'`)
	if code != 0 && code != 1 || out != "/dev/shm:\n\n/tmp:\n\n/work:\n0\n" {
		t.Fatalf("the next allocation found something of the previous one: %d %q", code, out)
	}

	// The pids limit: 1 vCPU is 512 processes, 700 do not start. Each
	// sleeps long enough that the first 512 are all still there when the
	// 513th starts, however slowly a loaded machine forks (with 5 s, a CI
	// machine running other suites once forked all 700 one after another).
	out, code = f.exec("n1", f.allocationOf(r3.ID), `i=0; while [ $i -lt 700 ]; do sleep 120 >/dev/null 2>&1 & i=$((i+1)); done; echo started $i`)
	if code == 0 || strings.Contains(out, "started 700") {
		t.Fatalf("700 processes started under a 512 limit: %d %s", code, out)
	}

	// A bridge-mode pool (n3's): an address of its own, the control plane
	// and metadata still refused.
	rb := f.bookWith("n3", 0, 2*time.Hour, 1024)
	f.awaitAssigned(rb)
	out, code = f.exec("n3", f.allocationOf(rb.ID), `ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d. -f1-2
bash -c 'echo > /dev/tcp/127.0.0.1/`+apiPort+`' 2>/dev/null && echo api:reached || echo api:refused
timeout 5 bash -c 'echo > /dev/tcp/169.254.169.254/80' 2>/dev/null && echo metadata:reached || echo metadata:refused`)
	if code != 0 || out != "10.87\napi:refused\nmetadata:refused\n" {
		t.Fatalf("bridge-mode probe: %d %q", code, out)
	}

	// A reservation that starts tomorrow runs nothing today.
	tomorrow := f.bookWith("n2", 24*time.Hour, 26*time.Hour, 1024)
	err := f.member.do(ctx, "POST", f.hub.URL()+"/v1/instances", uuid.NewString(),
		map[string]any{"reservationId": tomorrow.ID, "command": "true"}, nil)
	if es, ok := err.(errStatus); !ok || es.status != 409 {
		t.Fatalf("an instance on tomorrow's reservation: %v, want 409", err)
	}
}

// bookWith reserves one GPU of node n from now+from to now+to (the
// control plane's clock) with memoryMb of memory and one vCPU.
func (f *assignFleet) bookWith(n string, from, to time.Duration, memoryMB int64) assignReservation {
	f.t.Helper()
	now := f.sim.now(f.ctx)
	var r assignReservation
	f.must(f.member, "POST", "/v1/reservations", uuid.NewString(), map[string]any{"poolId": "pool-" + n, "gpus": 1,
		"gpuModel": "H100-80GB", "vcpu": 1, "memoryMb": memoryMB, "diskGb": 1,
		"start": now.Add(from).Format(time.RFC3339), "end": now.Add(to).Format(time.RFC3339)}, &r)
	return r
}

// awaitAssigned waits until r is active and its node acknowledged it.
func (f *assignFleet) awaitAssigned(r assignReservation) {
	f.t.Helper()
	waitFor(f.t, f.ctx, "reservation "+r.ID+" active and assigned", 30*time.Second, func() (bool, error) {
		return f.state(r.ID) == "active" && f.jobState(r.ID, "assign") == "succeeded", nil
	})
}

// exec runs script as an exec node job in the tenant's allocation on node
// n, through the API, and returns its output and exit code.
func (f *assignFleet) exec(n, alloc, script string) (string, int) {
	f.t.Helper()
	var c struct {
		ID, State, Output, Reason string
		ExitCode                  *int `json:"exitCode"`
	}
	f.must(f.member, "POST", "/v1/commands", uuid.NewString(), map[string]any{"nodeId": "node-" + n,
		"allocationId": alloc, "kind": "exec", "payload": map[string]any{"script": script, "timeoutSeconds": 60}}, &c)
	waitFor(f.t, f.ctx, "command "+c.ID+" done", 90*time.Second, func() (bool, error) {
		if err := f.member.do(f.ctx, "GET", f.hub.URL()+"/v1/commands/"+c.ID, "", nil, &c); err != nil {
			return false, err
		}
		return c.State == "succeeded" || c.State == "failed", nil
	})
	if c.ExitCode == nil {
		return c.Output + c.Reason, -1
	}
	return c.Output, *c.ExitCode
}

// instance creates an instance of r running command.
func (f *assignFleet) instance(r assignReservation, command string) assignInstance {
	f.t.Helper()
	var in assignInstance
	f.must(f.member, "POST", "/v1/instances", uuid.NewString(), map[string]any{"reservationId": r.ID,
		"command": command}, &in)
	return in
}

// awaitInstance waits until the instance is in state, and checks its
// reason and exit code.
func (f *assignFleet) awaitInstance(id, state, reason string, exitCode int) {
	f.t.Helper()
	var in struct {
		State, Reason string
		ExitCode      *int `json:"exitCode"`
	}
	// Three minutes, not one: the OOM hog fills its memory through a pipe
	// on one vCPU. Its first form (a shell variable grown through tr) once
	// took over a minute on a busy 2-core machine; tail -c, which keeps the
	// bytes it reads, takes a few seconds, and the bound stays for a slow
	// spell.
	waitFor(f.t, f.ctx, "instance "+id+" "+state, 3*time.Minute, func() (bool, error) {
		if err := f.member.do(f.ctx, "GET", f.hub.URL()+"/v1/instances/"+id, "", nil, &in); err != nil {
			return false, err
		}
		return in.State == state, nil
	})
	if in.ExitCode == nil || *in.ExitCode != exitCode || !strings.Contains(in.Reason, reason) {
		f.t.Fatalf("instance %s: %s, reason %q, exit code %v; want reason %q, exit code %d", id, in.State, in.Reason,
			in.ExitCode, reason, exitCode)
	}
}

// gpuMinor is the fake GPU index (its device minor) r holds:
// GPU-node-<n>-<i>.
func gpuMinor(t *testing.T, r assignReservation) int {
	t.Helper()
	if len(r.DeviceIDs) != 1 {
		t.Fatalf("reservation %s holds %v, want one GPU", r.ID, r.DeviceIDs)
	}
	i, err := strconv.Atoi(r.DeviceIDs[0][strings.LastIndex(r.DeviceIDs[0], "-")+1:])
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// hostProcess is the pid of a process of the machine whose command line
// starts with prefix, or 0.
func hostProcess(prefix string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.HasPrefix(strings.ReplaceAll(string(b), "\x00", " "), prefix) {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	return 0
}

// loopbackServer listens on the node's 127.0.0.1 and counts connections.
func loopbackServer(t *testing.T) (*atomic.Int64, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return &n, ln.Addr().(*net.TCPAddr).Port
}
