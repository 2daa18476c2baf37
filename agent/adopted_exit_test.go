package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

// An instance a restarted daemon adopted ends when its process exits on
// its own, as one the daemon started does: it is no longer listed as
// running, nor in the record, and its end is reported, for the control
// plane to end the instance then rather than at its allocation's end. Its
// exit status is the one its `runc exec` left in its exit file; one
// recorded by an older daemon, which kept no exit file, ends with none.
func TestAdoptedInstanceThatExitsIsReported(t *testing.T) {
	_, sb, _ := containerDaemon(t, time.Now)
	three, killed := int32(3), int32(137)
	for i, c := range []struct {
		olderDaemon bool
		then        string
		code        *int32
		reason      string
	}{
		{false, "exit 3", &three, "exit status 3"},
		{false, `x=$(head -c 200000000 /dev/zero | tr '\0' a)`, &killed, wire.ReasonOOMKilled},
		{true, "exit 3", nil, adoptedExitUnknown},
	} {
		a := assignOf(fmt.Sprintf("alc_adoptexit%d", i), 1, 64)
		sb.forgetAtEnd(t, a)
		// It ends once the test says so (a file in /work), after its
		// adoption.
		state := orphanInstance(t, sb, a, "ins_adx", "until [ -e /work/end ]; do sleep 0.05; done; "+c.then, c.olderDaemon)

		type ending struct {
			id     string
			code   *int32
			reason string
		}
		exited := make(chan ending, 1)
		ip := &instanceProcesses{exited: func(proc *instanceProcess, code *int32, reason string) {
			exited <- ending{proc.id, code, reason}
		}}
		adopted, err := ip.adopt(state)
		require.NoError(t, err)
		require.Equal(t, []string{"ins_adx"}, adopted)
		require.Len(t, ip.running(), 1)
		require.NoError(t, os.WriteFile(filepath.Join(sb.workDir(a.AllocationID), "end"), nil, 0o644))
		select {
		case e := <-exited:
			require.Equal(t, ending{"ins_adx", c.code, c.reason}, e, "then %s, older daemon: %v", c.then, c.olderDaemon)
		case <-time.After(20 * time.Second):
			t.Fatal("the adopted instance's end was never reported")
		}
		// Forgotten once its end was reported (endReported).
		require.Eventually(t, func() bool { return len(ip.running()) == 0 }, 10*time.Second, 10*time.Millisecond)
		b, err := os.ReadFile(filepath.Join(state, registryFile))
		require.NoError(t, err)
		require.JSONEq(t, `{}`, string(b))
	}
}

// orphanInstance is what a daemon that was killed left of instance id of
// allocation a: its workload running script, and the state directory that
// records it (as a daemon before exit files recorded it, when olderDaemon).
func orphanInstance(t *testing.T, sb *sandbox, a *wire.AssignPayload, id, script string, olderDaemon bool) string {
	t.Helper()
	w, err := sb.workload(context.Background(), a, script, "instances/"+id)
	require.NoError(t, err)
	require.NoError(t, w.cmd.Start())
	returned := make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(returned) }() // reaps it, as init would
	t.Cleanup(func() { w.kill(); <-returned; w.done() })
	ticks, ok := processStart(w.cmd.Process.Pid)
	require.True(t, ok)
	state := t.TempDir()
	rec := map[string]registeredInstance{id: {AllocationID: a.AllocationID, PID: w.cmd.Process.Pid,
		StartTicks: ticks, PIDFile: w.pidFile, Cgroup: w.cgroup, GroupRoot: w.group.root, GroupPath: w.group.path}}
	if !olderDaemon {
		r := rec[id]
		r.ExitFile, r.OOMKills = w.exitFile, w.oomBefore
		rec[id] = r
	}
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(state, registryFile), b, 0o600))
	return state
}

// An adopted instance leaves none of its files (process-*.json, .pid,
// .exit) in its allocation's directory once it has ended, however it ended:
// it exited on its own (once its end was reported), the daemon stopped it,
// or it ended while no daemon ran. They are not left for the allocation's
// unassign to remove, which may be its reservation's end, hours later.
func TestAdoptedInstanceLeavesNoProcessFiles(t *testing.T) {
	_, sb, _ := containerDaemon(t, time.Now)
	for i, how := range []string{"exits", "stopped", "ended-away"} {
		a := assignOf(fmt.Sprintf("alc_adoptfiles%d", i), 1, 64)
		sb.forgetAtEnd(t, a)
		id := "ins_files" + fmt.Sprint(i)
		state := orphanInstance(t, sb, a, id, "until [ -e /work/end ]; do sleep 0.05; done; exit 3", false)
		files := func() []string {
			m, err := filepath.Glob(filepath.Join(sb.domainDir(a.AllocationID), "process-*"))
			require.NoError(t, err)
			return m
		}
		require.NotEmpty(t, files(), "%s: the workload's files", how)
		exited := make(chan string, 1)
		ip := &instanceProcesses{exited: func(proc *instanceProcess, _ *int32, _ string) { exited <- proc.id }}
		end := func() {
			require.NoError(t, os.WriteFile(filepath.Join(sb.workDir(a.AllocationID), "end"), nil, 0o644))
		}
		switch how {
		case "exits":
			_, err := ip.adopt(state)
			require.NoError(t, err)
			end()
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				t.Fatal("the adopted instance's end was never reported")
			}
			require.Eventually(t, func() bool { return len(ip.running()) == 0 }, 10*time.Second, 10*time.Millisecond)
		case "stopped":
			_, err := ip.adopt(state)
			require.NoError(t, err)
			stopped := ip.stopWhere(100*time.Millisecond, true, func(string, string) string { return "test" })
			require.Len(t, stopped, 1)
		case "ended-away":
			end()
			require.Eventually(t, func() bool {
				exits, _ := filepath.Glob(filepath.Join(sb.domainDir(a.AllocationID), "process-*.exit"))
				return len(exits) == 1
			}, 20*time.Second, 10*time.Millisecond, "the orphan never exited")
			b, err := os.ReadFile(filepath.Join(state, registryFile))
			require.NoError(t, err)
			var rec map[string]registeredInstance
			require.NoError(t, json.Unmarshal(b, &rec))
			require.Eventually(t, func() bool { _, alive := processStart(rec[id].PID); return !alive },
				20*time.Second, 10*time.Millisecond)
			_, err = ip.adopt(state)
			require.NoError(t, err)
			require.Equal(t, id, <-exited)
		}
		require.Empty(t, files(), "%s: its files are left behind", how)
	}
}
