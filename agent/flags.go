package agent

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bettercompute/compute/wire"
)

// ParseFlags builds a Config from `compute agent` arguments. The join token
// comes from a file (--join-token-file) or from COMPUTE_JOIN_TOKEN, never
// from an argument: a process's command line is readable by every user of
// the machine, workloads included.
func ParseFlags(args []string) (Config, error) {
	fs, raw := newFlagSet()
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	return raw.config(fs)
}

// PrintFlags writes the flags ParseFlags reads, with their defaults, as
// Go's flag package lists them: `compute agent --help` shows them in its
// help, beside nothing the daemon does not read.
func PrintFlags(w io.Writer) {
	fs, _ := newFlagSet()
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// rawFlags are the values the flag set parses into: the Config, and the
// flags that become a Config's fields only after ParseFlags reads them.
type rawFlags struct {
	cfg                        Config
	gateways, cdiDirs, cniDirs string
	uidBase, uidCount          uint
}

// newFlagSet is the agent's flag set, parsing into the rawFlags it
// returns.
func newFlagSet() (*flag.FlagSet, *rawFlags) {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	raw := &rawFlags{}
	cfg := &raw.cfg
	fs.StringVar(&cfg.NodeID, "node", "", "node id (required)")
	fs.StringVar(&cfg.PoolID, "pool", "", "pool to register the node in (first join only)")
	fs.StringVar(&cfg.ServerURL, "server", "http://localhost:8080", "API base URL, used to join")
	fs.StringVar(&cfg.JoinTokenFile, "join-token-file", "", "file holding the single-use join token (deleted after joining)")
	fs.StringVar(&cfg.WorkloadIsolation, "workload-isolation", IsolationContainer,
		"container: each allocation's workloads run in a container of their own through runc (needs root); "+
			"none: plain processes of the daemon's user (development only)")
	fs.StringVar(&cfg.WorkloadDir, "workload-dir", "", "root of the allocations' directories (default "+
		DefaultWorkloadDir+"; with --workload-isolation=none, <state-dir>/workloads)")
	fs.StringVar(&cfg.UIDTable, "uid-table", DefaultUIDTable, "the machine's table of workload user ids, shared by its daemons")
	fs.StringVar(&cfg.RuncPath, "runc", "runc", "the runc binary")
	fs.StringVar(&raw.cdiDirs, "cdi-spec-dirs", strings.Join(DefaultCDISpecDirs, ","), "directories of the GPUs' CDI specs "+
		"(nvidia-ctk cdi generate), comma-separated; --fake-gpus writes its own")
	fs.Int64Var(&cfg.PidsPerVCPU, "pids-per-vcpu", DefaultPidsPerVCPU, "an allocation's process limit per vCPU")
	fs.StringVar(&raw.cniDirs, "cni-bin-dirs", strings.Join(DefaultCNIBinDirs, ","), "directories of the CNI plugins "+
		"bridge-mode pools' networks use, comma-separated")
	fs.StringVar(&cfg.BridgeSubnet, "bridge-subnet", DefaultBridgeSubnet, "address range of bridge-mode allocations")
	fs.UintVar(&raw.uidBase, "workload-uid-base", DefaultWorkloadUIDBase, "first user id handed to workloads")
	fs.UintVar(&raw.uidCount, "workload-uid-count", DefaultWorkloadUIDCount, "number of user ids handed to workloads")
	fs.StringVar(&raw.gateways, "gateway", "ws://localhost:8081", "gateway URLs, comma-separated, tried in turn")
	fs.StringVar(&cfg.StateDir, "state-dir", "", "directory for the credential and the journal (default ./.compute/agent-<node>)")
	fs.StringVar(&cfg.FakeGPUs, "fake-gpus", "", "fake GPU inventory, e.g. 8xH100-80GB, or \""+NoGPUs+"\" for no GPUs "+
		"(default: the real GPUs, from nvidia-smi)")
	fs.StringVar(&cfg.CgroupRoot, "cgroup-root", DefaultCgroupRoot, "where the cgroup hierarchies are mounted")
	fs.DurationVar(&cfg.StopGrace, "stop-grace", DefaultStopGrace, "time a stopped workload gets between SIGTERM and SIGKILL")
	fs.DurationVar(&cfg.ResyncEvery, "resync-every", DefaultResyncEvery, "how often the watchdog stops workloads past their assignment")
	fs.DurationVar(&cfg.InventoryEvery, "inventory-every", DefaultInventoryEvery,
		"how often a connected daemon reads its GPUs again and reports a change (negative: never)")
	const scalarsHelp = " (registered at the first join; when given, reported at every connect and adopted " +
		"when the node's bookings fit it, at once or once they do; the node's ScalarsMismatch condition says why meanwhile)"
	fs.Int64Var(&cfg.VCPU, "vcpu", 64, "allocatable vCPUs"+scalarsHelp)
	fs.Int64Var(&cfg.MemoryMB, "memory-mb", 512*1024, "allocatable memory in MB"+scalarsHelp)
	fs.Int64Var(&cfg.DiskGB, "disk-gb", 2000, "allocatable disk in GB"+scalarsHelp)
	return fs, raw
}

// config is the Config of the flags fs parsed into raw.
func (raw *rawFlags) config(fs *flag.FlagSet) (Config, error) {
	cfg := raw.cfg
	uidBase, uidCount, cniDirs, cdiDirs, gateways := raw.uidBase, raw.uidCount, raw.cniDirs, raw.cdiDirs, raw.gateways
	// A scalar given is the operator's statement about the machine, and
	// reported; a default is not, and never overrides the node's record.
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	pick := func(name string, v int64) *int64 {
		if !given[name] {
			return nil
		}
		return &v
	}
	sc := wire.NodeScalars{VCPU: pick("vcpu", cfg.VCPU), MemoryMB: pick("memory-mb", cfg.MemoryMB),
		DiskGB: pick("disk-gb", cfg.DiskGB)}
	if sc != (wire.NodeScalars{}) {
		cfg.Scalars = &sc
	}
	if cfg.VCPU < 0 || cfg.MemoryMB < 0 || cfg.DiskGB < 0 {
		return Config{}, fmt.Errorf("agent: --vcpu, --memory-mb and --disk-gb cannot be negative")
	}
	cfg.WorkloadUIDBase, cfg.WorkloadUIDCount = uint32(uidBase), uint32(uidCount)
	for _, d := range strings.Split(cniDirs, ",") {
		if d = strings.TrimSpace(d); d != "" {
			cfg.CNIBinDirs = append(cfg.CNIBinDirs, d)
		}
	}
	for _, d := range strings.Split(cdiDirs, ",") {
		if d = strings.TrimSpace(d); d != "" {
			cfg.CDISpecDirs = append(cfg.CDISpecDirs, d)
		}
	}
	// A token in the environment stays out of process listings; it is taken
	// out of the environment at once, so that nothing the daemon starts
	// inherits it.
	cfg.JoinToken = os.Getenv("COMPUTE_JOIN_TOKEN")
	_ = os.Unsetenv("COMPUTE_JOIN_TOKEN")
	if cfg.NodeID == "" {
		return Config{}, fmt.Errorf("agent: --node is required")
	}
	if cfg.StateDir == "" {
		cfg.StateDir = ".compute/agent-" + cfg.NodeID
	}
	for _, g := range strings.Split(gateways, ",") {
		if g = strings.TrimSpace(g); g != "" {
			cfg.GatewayURLs = append(cfg.GatewayURLs, g)
		}
	}
	return cfg, nil
}
