package agent

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// ParseFlags builds a Config from `compute agent` arguments. The join token
// may also come from COMPUTE_JOIN_TOKEN, so that it stays out of process
// listings.
func ParseFlags(args []string) (Config, error) {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	var cfg Config
	var gateways string
	fs.StringVar(&cfg.NodeID, "node", "", "node id (required)")
	fs.StringVar(&cfg.PoolID, "pool", "", "pool to register the node in (first join only)")
	fs.StringVar(&cfg.ServerURL, "server", "http://localhost:8080", "API base URL, used to join")
	fs.StringVar(&cfg.JoinToken, "join-token", os.Getenv("COMPUTE_JOIN_TOKEN"), "operator token used once to join (or COMPUTE_JOIN_TOKEN)")
	fs.StringVar(&gateways, "gateway", "ws://localhost:8081", "gateway URLs, comma-separated, tried in turn")
	fs.StringVar(&cfg.StateDir, "state-dir", "", "directory for the credential and the journal (default ./.compute/agent-<node>)")
	fs.StringVar(&cfg.FakeGPUs, "fake-gpus", "", "fake GPU inventory, e.g. 8xH100-80GB")
	fs.Int64Var(&cfg.VCPU, "vcpu", 64, "allocatable vCPUs")
	fs.Int64Var(&cfg.MemoryMB, "memory-mb", 512*1024, "allocatable memory in MB")
	fs.Int64Var(&cfg.DiskGB, "disk-gb", 2000, "allocatable disk in GB")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
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
