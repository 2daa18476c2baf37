package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/commands"
)

// The demo runs its nodes' daemons itself, in the serve process: a demo
// node whose daemon never connects is unreachable 40 s after it was
// registered, and a newcomer's first reservation would stay pending. Each
// daemon is agent.Run, as `compute agent` runs it, with the node's fake GPUs
// (demoNode.FakeGPUs), a state directory of its own under the demo
// directory, and the gateway of this server; it joins through the command
// handlers directly (no token, no HTTP round trip), as the server's
// operator.

// demoJoiner joins a demo node as the bootstrap operator, in process.
type demoJoiner struct{ h *commands.Handlers }

// Join issues the node's credential (the node is registered by seedDemo).
func (j demoJoiner) Join(ctx context.Context, nodeID string, _ agent.Inventory) (string, error) {
	cred, err := j.h.JoinNode(ctx, bootstrapActor, nodeID)
	if err != nil {
		return "", err
	}
	return cred.Token, nil
}

// demoIsolation is how the demo daemons isolate workloads: the agent's
// default (containers through runc) when this process is root and runc is
// installed, else agent.IsolationNone, which runs workloads as this
// process's user: for a development machine only.
func demoIsolation() string {
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("runc"); err == nil {
			return ""
		}
	}
	return agent.IsolationNone
}

// demoAgentConfigs are the demo daemons' configurations. Dir is the demo's
// directory: each node's state is in Dir/agent-<node>, its workloads in
// Dir/workloads/<node> (or, where a directory above that is not root's
// alone, which container isolation requires, under /var/lib/compute). The
// state of a node that seedDemo registered afresh is cleared first: a
// credential left there is for a database that is gone.
func demoAgentConfigs(h *commands.Handlers, fleet demoFleet, at demoEndpoints, isolation string,
	logger *slog.Logger) ([]agent.Config, error) {
	dir, err := filepath.Abs(at.Dir)
	if err != nil {
		return nil, fmt.Errorf("demo daemons: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("demo daemons: %w", err)
	}
	workloads := filepath.Join(dir, "workloads")
	if isolation != agent.IsolationNone && !rootsAlone(dir) {
		sum := sha256.Sum256([]byte(dir))
		workloads = filepath.Join("/var/lib/compute", "demo-"+hex.EncodeToString(sum[:6]), "workloads")
	}
	var cfgs []agent.Config
	for _, n := range fleet.Nodes {
		id := n.Register.ID
		state := filepath.Join(dir, "agent-"+id)
		if fleet.Registered[id] {
			if err := os.RemoveAll(state); err != nil {
				return nil, fmt.Errorf("demo daemon %s: %w", id, err)
			}
		}
		if err := os.MkdirAll(state, 0o700); err != nil {
			return nil, fmt.Errorf("demo daemon %s: %w", id, err)
		}
		cfgs = append(cfgs, agent.Config{
			NodeID: id, PoolID: demoPool, ServerURL: localURL("http", at.Addr),
			GatewayURLs: []string{localURL("ws", at.GatewayAddr)}, StateDir: state,
			FakeGPUs: n.FakeGPUs, VCPU: n.Register.VCPU, MemoryMB: n.Register.MemoryMB, DiskGB: n.Register.DiskGB,
			WorkloadIsolation: isolation, WorkloadDir: filepath.Join(workloads, id),
			Joiner: demoJoiner{h: h}, Logger: logger.With("demo_daemon", id),
		})
	}
	return cfgs, nil
}

// runDemoDaemons starts the demo fleet's daemons with goRun; they stop
// when ctx ends.
func runDemoDaemons(ctx context.Context, h *commands.Handlers, fleet demoFleet, at demoEndpoints,
	logger *slog.Logger, goRun func(func())) error {
	isolation := demoIsolation()
	if isolation == agent.IsolationNone {
		logger.Warn("the demo's workloads run without isolation, as this process's user (development only): " +
			"isolating them needs root and runc")
	}
	cfgs, err := demoAgentConfigs(h, fleet, at, isolation, logger)
	if err != nil {
		return err
	}
	for _, cfg := range cfgs {
		goRun(func() {
			if err := agent.Run(ctx, cfg); err != nil {
				logger.Error("demo daemon stopped", "node", cfg.NodeID, "err", err)
			}
		})
	}
	logger.Info("demo node daemons running in this process", "nodes", len(cfgs), "state", at.Dir)
	return nil
}

// rootsAlone reports whether dir and every directory above it belong to
// root and no other user can write into them (sticky ones such as /tmp
// excepted, above dir): what a container workload root demands.
func rootsAlone(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Lstat(d)
		if err != nil {
			return false
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		switch {
		case st.Mode()&fs.ModeSymlink != 0, !ok, sys.Uid != 0:
			return false
		case st.Mode().Perm()&0o022 != 0 && (st.Mode()&fs.ModeSticky == 0 || d == dir):
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}
