package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// An instance runs in a process group of its own, so it survives a daemon
// that is killed (a crash, an OOM kill, a deploy): workloads keep running
// while their daemon is away, as they do while the node is disconnected.
// The daemon that comes back must still know them, or an instance whose
// reservation ended while it was away would run forever. So every running
// instance is recorded in the state directory, with its process's start
// time (which tells it from a later process that reused the pid), and a
// restarted daemon adopts the ones still running: they are stopped like
// any other instance when their allocation is unassigned or has ended, and
// end when their process does; those that ended while no daemon ran are
// reported ended at once (adopted_exit.go).

// registryFile is the record of running instances in the state directory.
const registryFile = "instances.json"

// adoptPoll is how often an adopted process (not a child of this daemon,
// so it cannot be waited for) is checked for having exited.
const adoptPoll = 200 * time.Millisecond

// registeredInstance is one running instance as recorded on disk.
type registeredInstance struct {
	AllocationID string `json:"allocationId"`
	PID          int    `json:"pid"`
	StartTicks   uint64 `json:"startTicks"` // field 22 of /proc/<pid>/stat
	// PIDFile and Cgroup find the workload's own process in its container.
	PIDFile string `json:"pidFile,omitempty"`
	Cgroup  string `json:"cgroup,omitempty"`
	// GroupRoot and GroupPath are the workload's own cgroup, which holds
	// every process it started (absent in a record of an older daemon).
	GroupRoot string `json:"groupRoot,omitempty"`
	GroupPath string `json:"groupPath,omitempty"`
	// ExitFile is where the workload's exit status is written when it
	// exits (adopted_exit.go; absent in a record of an older daemon).
	ExitFile string `json:"exitFile,omitempty"`
	// OOMKills is how many processes the allocation's OOM killer had killed
	// when the workload started: one more by its exit makes a SIGKILL
	// OOMKilled.
	OOMKills int64 `json:"oomKills,omitempty"`
}

// persist rewrites the record from ip.procs. Callers hold ip.mu.
func (ip *instanceProcesses) persist() error {
	if ip.registry == "" {
		return nil
	}
	rec := make(map[string]registeredInstance, len(ip.procs))
	for id, p := range ip.procs {
		rec[id] = registeredInstance{AllocationID: p.allocationID, PID: p.pid, StartTicks: p.startTicks,
			PIDFile: p.pidFile, Cgroup: p.cgroup, GroupRoot: p.group.root, GroupPath: p.group.path, ExitFile: p.exitFile,
			OOMKills: p.oomBefore}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return writeFileDurable(ip.registry, b, 0o600)
}

// adopt loads the record in stateDir and takes over every instance whose
// process still runs. The rest ended while no daemon ran: each has its end
// reported and is then dropped from the record (endedAway), before adopt
// returns.
func (ip *instanceProcesses) adopt(stateDir string) ([]string, error) {
	adopted, ended, err := ip.adoptRecord(stateDir)
	for _, proc := range ended {
		ip.endedAway(proc)
	}
	return adopted, err
}

// adoptRecord is adopt but for the reports: it returns the instances it
// adopted, and those whose process is gone.
func (ip *instanceProcesses) adoptRecord(stateDir string) ([]string, []*instanceProcess, error) {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	ip.registry = filepath.Join(stateDir, registryFile)
	b, err := os.ReadFile(ip.registry)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("instance record: %w", err)
	}
	var rec map[string]registeredInstance
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, nil, fmt.Errorf("instance record %s: %w", ip.registry, err)
	}
	if ip.procs == nil {
		ip.procs = map[string]*instanceProcess{}
	}
	var adopted []string
	var ended []*instanceProcess
	for id, r := range rec {
		if ip.procs[id] != nil {
			continue
		}
		proc := &instanceProcess{id: id, allocationID: r.AllocationID, pid: r.PID, startTicks: r.StartTicks,
			done: make(chan struct{}), pidFile: r.PIDFile, cgroup: r.Cgroup, exitFile: r.ExitFile,
			oomBefore: r.OOMKills}
		if r.GroupPath != "" {
			proc.group = workloadCgroup{root: r.GroupRoot, path: r.GroupPath, v2: cgroupV2(r.GroupRoot)}
		}
		if ticks, ok := processStart(r.PID); !ok || ticks != r.StartTicks {
			// Gone, or the pid now belongs to another process: listed, and
			// recorded, until its end is reported (endedAway).
			proc.ending = true
			close(proc.done)
			ip.procs[id] = proc
			ended = append(ended, proc)
			continue
		}
		if r.PIDFile != "" {
			proc.kill = func() { killWorkload(proc.group, r.PIDFile, r.Cgroup) }
		}
		go watchAdopted(proc)
		go ip.endAdopted(proc)
		ip.procs[id] = proc
		adopted = append(adopted, id)
	}
	return adopted, ended, ip.persist()
}

// watchAdopted closes proc.done once the adopted process has exited (or
// its pid went to another process), and what it left running is gone. The
// `runc exec` of an instance whose own process has exited waits on what
// that left in the background: endWithProcess ends it.
func watchAdopted(proc *instanceProcess) {
	returned, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		_, _ = endWithProcess(proc.pidFile, proc.group, returned)
	}()
	t := time.NewTicker(adoptPoll)
	defer t.Stop()
	for range t.C {
		if ticks, ok := processStart(proc.pid); !ok || ticks != proc.startTicks {
			close(returned)
			<-watched
			_ = proc.group.remove()
			close(proc.done)
			return
		}
	}
}

// processStart is the start time of process pid in clock ticks since boot,
// and false when there is no such live process (a zombie counts as gone).
func processStart(pid int) (uint64, bool) {
	if pid <= 0 || syscall.Kill(pid, 0) != nil && !errors.Is(syscall.Kill(pid, 0), syscall.EPERM) {
		return 0, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is field 3 (state); field 22 (starttime) is fields[19].
	if len(fields) < 20 || string(fields[0]) == "Z" {
		return 0, false
	}
	ticks, err := strconv.ParseUint(string(fields[19]), 10, 64)
	return ticks, err == nil
}
