// Package agent is the node daemon, `compute agent`. It joins its node
// once (registering its inventory and receiving the node credential), then
// keeps a session open through a gateway: it says hello with its journal
// id and observed generation, replays its journal, sends its inventory
// (what it holds and runs), heartbeats, and carries out node jobs. Its
// assignments arrive as "assign" and "unassign" jobs: it refuses one that
// overlaps devices it already holds, runs an allocation's workloads only
// while it holds the allocation and with only its devices, and stops them
// when the allocation is unassigned or its end has passed.
//
// Everything it must remember lives in StateDir: the credential and the
// journal. A daemon restarted with the same StateDir is the same daemon; one
// that lost it is a new journal, and the control plane treats it so.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/bettercompute/compute/wire"
)

// Config is the daemon's configuration (see ParseFlags).
type Config struct {
	NodeID string
	PoolID string
	// ServerURL is the API the node joins through (POST
	// /v1/nodes/{id}/join), with JoinToken: a single-use join token (or an
	// operator token). Only needed until the node has a credential in
	// StateDir; the daemon forgets it after joining.
	ServerURL string
	JoinToken string
	// JoinTokenFile holds the join token instead of JoinToken, so that it
	// never shows in the process's command line. It is deleted once the
	// node has joined.
	JoinTokenFile string
	// GatewayURLs are tried in turn: ws://host:port of gateways.
	GatewayURLs []string
	StateDir    string
	// FakeGPUs is a fake inventory such as "8xH100-80GB", or NoGPUs; empty
	// means the real one, read from nvidia-smi (see NvidiaSMIGPUs).
	FakeGPUs string
	// VCPU, MemoryMB and DiskGB are what the node registers with at its
	// first join.
	VCPU     int64
	MemoryMB int64
	DiskGB   int64
	// Scalars are the ones of them its operator set (ParseFlags: --vcpu,
	// --memory-mb, --disk-gb given), reported in every inventory: the
	// control plane adopts each that the node's bookings fit, so that a
	// correction reaches a node that joined long ago. Nil reports none.
	Scalars *wire.NodeScalars
	// WorkloadIsolation is IsolationContainer (default) or IsolationNone.
	WorkloadIsolation string
	// WorkloadDir is the root of the allocations' directories (default
	// DefaultWorkloadDir; with IsolationNone, <StateDir>/workloads). In
	// container mode it and every directory above it must be root's and
	// writable by no other user.
	WorkloadDir string
	// WorkloadUIDBase and WorkloadUIDCount are the range of user ids handed
	// to allocations (defaults DefaultWorkloadUIDBase, DefaultWorkloadUIDCount),
	// from the machine's table UIDTable (default DefaultUIDTable), shared by
	// every daemon on the machine.
	WorkloadUIDBase  uint32
	WorkloadUIDCount uint32
	UIDTable         string
	// RuncPath is the runc binary (default: runc on PATH).
	RuncPath string
	// CDISpecDirs are where the GPUs' CDI specs are (default
	// DefaultCDISpecDirs); with FakeGPUs the daemon writes its own.
	CDISpecDirs []string
	// CNIBinDirs are where the CNI plugins of bridge networking are
	// (default DefaultCNIBinDirs); BridgeSubnet their address range
	// (default DefaultBridgeSubnet).
	CNIBinDirs   []string
	BridgeSubnet string
	// PidsPerVCPU is an allocation's process limit per vCPU (default
	// DefaultPidsPerVCPU).
	PidsPerVCPU int64
	// CgroupRoot is where the cgroup hierarchies are mounted (default
	// DefaultCgroupRoot); the daemon reads them, runc writes them.
	CgroupRoot string
	// StopGrace is how long a stopped workload has between SIGTERM and
	// SIGKILL (default DefaultStopGrace).
	StopGrace time.Duration
	// ResyncEvery is how often the watchdog stops workloads that outlived
	// their assignment (default DefaultResyncEvery).
	ResyncEvery time.Duration
	// DiskCheckEvery is how often allocations' work directories are
	// measured against their diskGb (default DefaultDiskCheckEvery).
	DiskCheckEvery time.Duration
	// InventoryEvery is how often a connected daemon reads its GPUs again
	// and reports a change (default DefaultInventoryEvery; negative: never).
	InventoryEvery time.Duration
	// ReconnectDelay is the pause between session attempts (default 1 s).
	ReconnectDelay time.Duration
	// Now is the node's clock (nil: time.Now). Assignments' windows are
	// judged by the control plane's clock, measured against this one at
	// every session open (see clock.go). Tests give it the control plane's
	// simulated clock, or one off from it.
	Now func() time.Time
	// Joiner joins the node; nil means HTTP against ServerURL.
	Joiner Joiner
	Logger *slog.Logger
}

// Run joins the node if it has no credential yet and then keeps a session
// open through the gateways until ctx ends. Then it stops gracefully
// (stopGracefully: its workloads stopped and reported, its session closed)
// and returns nil.
func Run(ctx context.Context, cfg Config) error {
	if cfg.NodeID == "" || cfg.StateDir == "" || len(cfg.GatewayURLs) == 0 {
		return errors.New("agent: node id, state dir and at least one gateway URL are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// Every line names the node, the sandbox's and cgroups' included.
	cfg.Logger = cfg.Logger.With("node", cfg.NodeID)
	if cfg.ReconnectDelay <= 0 {
		cfg.ReconnectDelay = time.Second
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	if cfg.ResyncEvery <= 0 {
		cfg.ResyncEvery = DefaultResyncEvery
	}
	if cfg.InventoryEvery == 0 {
		cfg.InventoryEvery = DefaultInventoryEvery
	}
	log := cfg.Logger
	j, err := openJournal(cfg.StateDir)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	// The state directory holds the credential and the journal: the
	// daemon's alone, whatever mode it was created with.
	if err := os.Chmod(cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("agent: state dir: %w", err)
	}
	gpus, err := inventoryGPUs(ctx, cfg.NodeID, cfg.FakeGPUs)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	sb, err := openSandbox(ctx, cfg, gpus)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if ctx.Err() != nil {
		// Stopped while it checked the node: a check cut short (`runc
		// --version: context canceled`) says nothing about isolation, and
		// logging it as "workloads will be refused" sent whoever read the
		// log of a demo that failed to start after runc.
		return nil
	}
	if err := sb.check(); err != nil {
		log.Error("workloads will be refused: this node cannot isolate them", "err", err)
	}
	token, err := credential(ctx, cfg, gpus)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	cfg.JoinToken = "" // not needed again: the credential is in StateDir
	d := &daemon{cfg: cfg, token: token, journal: j, log: log, sandbox: sb, gpus: gpus, now: cfg.Now,
		assigned: make(chan struct{}, 1)}
	if d.now == nil {
		d.now = time.Now
	}
	d.instances.now = d.windowNow
	sb.windowNow = d.windowNow
	d.instances.exited = d.reportExited
	d.instances.log = log
	adopted, err := d.restore()
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if len(adopted) > 0 {
		log.Info("adopted running instances", "instances", adopted)
	}
	// Before any session: what runs in containers of allocations the
	// journal does not hold can be no adopted instance (orphans.go).
	d.stopStrays(ctx)
	defer d.running.wait()
	go d.watchdog(ctx)
	if sb.mode == IsolationContainer {
		go d.diskWatch(ctx)
	}
	// The sessions live on a context of their own, which outlives ctx by
	// the shutdown's reports and no longer (see stopGracefully).
	sessions, endSessions := context.WithCancel(context.WithoutCancel(ctx))
	defer endSessions()
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		d.keepSession(ctx, sessions)
	}()
	<-ctx.Done()
	d.stopGracefully(endSessions)
	<-kept
	return nil
}

// restore takes over what a killed predecessor left in the state
// directory: the reports it kept for its next session are this daemon's to
// send (unsent_reports.go), the instances it left running are this
// daemon's now (the watchdog stops those whose allocation is no longer
// assigned), and the end of those that ended while no daemon ran is
// reported. It returns the instances it adopted.
func (d *daemon) restore() ([]string, error) {
	// First the reports it kept: they came before anything found now.
	if err := d.loadUnsent(); err != nil {
		return nil, err
	}
	return d.instances.adopt(d.cfg.StateDir)
}

// credential returns the node credential from StateDir, joining first when
// there is none.
func credential(ctx context.Context, cfg Config, gpus []wire.InventoryGPU) (string, error) {
	if b, err := os.ReadFile(credentialPath(cfg)); err == nil && len(b) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	return join(ctx, cfg, gpus)
}

// join joins the node with its join token (or cfg.Joiner), keeps the
// credential it gets in StateDir, replacing any, and deletes the join
// token file.
func join(ctx context.Context, cfg Config, gpus []wire.InventoryGPU) (string, error) {
	path := credentialPath(cfg)
	joiner := cfg.Joiner
	if joiner == nil {
		joinToken, err := readJoinToken(cfg)
		if err != nil {
			return "", err
		}
		joiner = HTTPJoiner{ServerURL: cfg.ServerURL, Token: joinToken}
	}
	token, err := joiner.Join(ctx, cfg.NodeID, Inventory{PoolID: cfg.PoolID, VCPU: cfg.VCPU, MemoryMB: cfg.MemoryMB,
		DiskGB: cfg.DiskGB, GPUs: joinGPUs(gpus)})
	if err != nil {
		return "", fmt.Errorf("join: %w", err)
	}
	if err := writeFileDurable(path, []byte(token), 0o600); err != nil {
		return "", fmt.Errorf("save credential: %w", err)
	}
	// The join token has done its work; a copy left on disk is one more
	// secret to steal.
	if cfg.JoinTokenFile != "" {
		if err := os.Remove(cfg.JoinTokenFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("delete join token file: %w", err)
		}
	}
	return token, nil
}

// readJoinToken is JoinToken, or the content of JoinTokenFile.
func readJoinToken(cfg Config) (string, error) {
	if cfg.JoinToken != "" || cfg.JoinTokenFile == "" {
		return cfg.JoinToken, nil
	}
	b, err := os.ReadFile(cfg.JoinTokenFile)
	if err != nil {
		return "", fmt.Errorf("join token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
