package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/bettercompute/compute/nodes/wire"
)

// instanceProcesses are the instances this daemon process runs. With the
// fake inventory an instance is a real process (sh -c <command>, by
// default a long sleep) in <state-dir>/instances/<id>: it really starts and
// really stops, which is what the control plane's lifecycle needs to see.
// Processes stop with the daemon process.
type instanceProcesses struct {
	mu    sync.Mutex
	procs map[string]*instanceProcess
}

type instanceProcess struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process exited
}

// start starts the instance's process; a start of an instance already
// running here is a success (the command was redelivered).
func (ip *instanceProcesses) start(life context.Context, stateDir string, res wire.Message, p commandPayload) wire.Message {
	if p.InstanceID == "" {
		res.State, res.Reason = outcomeFailed, "instance-start without instanceId"
		return res
	}
	ip.mu.Lock()
	defer ip.mu.Unlock()
	if ip.procs == nil {
		ip.procs = map[string]*instanceProcess{}
	}
	if cur := ip.procs[p.InstanceID]; cur != nil {
		res.Output = fmt.Sprintf("instance %s already running as pid %d", p.InstanceID, cur.cmd.Process.Pid)
		return res
	}
	dir := filepath.Join(stateDir, "instances", filepath.Base(p.InstanceID))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		res.State, res.Reason = outcomeFailed, "instance dir: "+err.Error()
		return res
	}
	cmd := exec.CommandContext(life, "sh", "-c", p.Script)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		res.State, res.Reason = outcomeFailed, "start: "+err.Error()
		return res
	}
	proc := &instanceProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(proc.done)
	}()
	ip.procs[p.InstanceID] = proc
	res.Output = fmt.Sprintf("instance %s started as pid %d", p.InstanceID, cmd.Process.Pid)
	return res
}

// stop kills the instance's process and waits for it to exit. Stopping an
// instance that does not run here succeeds: stop is what the caller wants
// either way.
func (ip *instanceProcesses) stop(res wire.Message, p commandPayload) wire.Message {
	ip.mu.Lock()
	proc := ip.procs[p.InstanceID]
	delete(ip.procs, p.InstanceID)
	ip.mu.Unlock()
	if proc == nil {
		res.Output = fmt.Sprintf("instance %s is not running here", p.InstanceID)
		return res
	}
	_ = proc.cmd.Process.Kill()
	<-proc.done
	res.Output = fmt.Sprintf("instance %s stopped (pid %d)", p.InstanceID, proc.cmd.Process.Pid)
	return res
}
