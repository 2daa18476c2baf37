package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// runc drives the runc binary, as containerd's runc shim does: the daemon
// writes a bundle (an OCI spec and a root directory) and asks runc to run,
// exec into, kill and delete containers. The kernel then enforces what the
// spec says: namespaces, the device cgroup, limits, seccomp.
type runc struct {
	bin  string // the runc binary
	root string // runc's state directory (--root): this daemon's containers
}

func (r *runc) command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, r.bin, append([]string{"--root", r.root}, args...)...)
}

// run runs a runc command to its end, with its output in the error.
func (r *runc) run(ctx context.Context, args ...string) error {
	out, err := r.command(ctx, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("runc %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// version checks that the binary runs, and returns what it says it is.
func (r *runc) version(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, r.bin, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w: %s", r.bin, err, bytes.TrimSpace(out))
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(first), nil
}

// containerState is what `runc state` says of a container.
type containerState struct {
	Status string `json:"status"` // created, running, paused, stopped
	PID    int    `json:"pid"`
}

// state returns the container's state; Status "" when there is no such
// container.
func (r *runc) state(ctx context.Context, id string) (containerState, error) {
	var out, errOut bytes.Buffer
	cmd := r.command(ctx, "state", id)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if strings.Contains(errOut.String(), "does not exist") || strings.Contains(errOut.String(), "not exist") {
			return containerState{}, nil
		}
		return containerState{}, fmt.Errorf("runc state %s: %w: %s", id, err, bytes.TrimSpace(errOut.Bytes()))
	}
	var st containerState
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		return containerState{}, fmt.Errorf("runc state %s: %w", id, err)
	}
	return st, nil
}

// list returns the ids of this daemon's containers.
func (r *runc) list(ctx context.Context) ([]string, error) {
	out, err := r.command(ctx, "list", "--quiet").Output()
	if err != nil {
		return nil, fmt.Errorf("runc list: %w", err)
	}
	return strings.Fields(string(out)), nil
}

// start creates and starts a container from bundle, detached: its first
// process keeps running after runc returns. Its standard streams are
// /dev/null; runc's own complaints are in the error.
func (r *runc) start(ctx context.Context, id, bundle string) error {
	errFile, err := os.CreateTemp(bundle, "runc-run-*.log")
	if err != nil {
		return err
	}
	defer os.Remove(errFile.Name())
	defer errFile.Close()
	cmd := r.command(ctx, "run", "--detach", "--bundle", bundle, id)
	cmd.Stderr = errFile
	if err := cmd.Run(); err != nil {
		b, _ := os.ReadFile(errFile.Name())
		return fmt.Errorf("runc run %s: %w: %s", id, err, bytes.TrimSpace(b))
	}
	return nil
}

// exec is a workload in container id: process.json describes it, and
// runc writes its process id (on the host) to pidFile; it starts in the
// sub-cgroup cgroup names (workloadCgroup.execFlag). The returned
// command, once started, waits for the workload and exits with its
// status (128+n when signal n ended it), forwarding the signals it gets.
func (r *runc) exec(ctx context.Context, id, processFile, pidFile, cgroup string) *exec.Cmd {
	return r.command(ctx, "exec", "--cgroup", cgroup, "--process", processFile, "--pid-file", pidFile, id)
}

// kill sends sig to every process of the container.
func (r *runc) killAll(ctx context.Context, id, sig string) error {
	return r.run(ctx, "kill", "--all", id, sig)
}

// remove kills every process of the container and deletes it, its cgroup
// included. A container that does not exist is removed already.
func (r *runc) remove(ctx context.Context, id string) error {
	st, err := r.state(ctx, id)
	if err != nil || st.Status == "" {
		return err
	}
	return r.run(ctx, "delete", "--force", id)
}
