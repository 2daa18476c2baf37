// Package agent is the node daemon, `compute agent`. It joins its node
// once (registering its inventory and receiving the node credential), then
// keeps a session open through a gateway: it says hello with its journal
// id, replays its journal, heartbeats, and carries out assignments,
// refusing any that overlaps devices it already holds.
//
// Everything it must remember lives in StateDir: the credential and the
// journal. A daemon restarted with the same StateDir is the same daemon; one
// that lost it is a new journal, and the control plane treats it so.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Config is the daemon's configuration (see ParseFlags).
type Config struct {
	NodeID string
	PoolID string
	// ServerURL is the API the node joins through (POST
	// /v1/nodes/{id}/join), with JoinToken, an operator token. Only needed
	// until the node has a credential in StateDir.
	ServerURL string
	JoinToken string
	// GatewayURLs are tried in turn: ws://host:port of gateways.
	GatewayURLs []string
	StateDir    string
	// FakeGPUs is a fake inventory such as "8xH100-80GB".
	FakeGPUs string
	VCPU     int64
	MemoryMB int64
	DiskGB   int64
	// ReconnectDelay is the pause between session attempts (default 1 s).
	ReconnectDelay time.Duration
	// Joiner joins the node; nil means HTTP against ServerURL.
	Joiner Joiner
	Logger *slog.Logger
}

// Run joins the node if it has no credential yet and then keeps a session
// open through the gateways until ctx ends. It returns nil when ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if cfg.NodeID == "" || cfg.StateDir == "" || len(cfg.GatewayURLs) == 0 {
		return errors.New("agent: node id, state dir and at least one gateway URL are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ReconnectDelay <= 0 {
		cfg.ReconnectDelay = time.Second
	}
	log := cfg.Logger.With("node", cfg.NodeID)
	j, err := openJournal(cfg.StateDir)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	token, err := credential(ctx, cfg)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	d := &daemon{cfg: cfg, token: token, journal: j, log: log}
	defer d.running.wait()
	for i := 0; ; i++ {
		url := cfg.GatewayURLs[i%len(cfg.GatewayURLs)]
		err := d.session(ctx, url)
		if ctx.Err() != nil {
			return nil
		}
		log.Warn("session ended", "gateway", url, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(cfg.ReconnectDelay):
		}
	}
}

// credential returns the node credential from StateDir, joining first when
// there is none.
func credential(ctx context.Context, cfg Config) (string, error) {
	path := filepath.Join(cfg.StateDir, "credential")
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	gpus, err := FakeGPUs(cfg.NodeID, cfg.FakeGPUs)
	if err != nil {
		return "", err
	}
	joiner := cfg.Joiner
	if joiner == nil {
		joiner = HTTPJoiner{ServerURL: cfg.ServerURL, Token: cfg.JoinToken}
	}
	token, err := joiner.Join(ctx, cfg.NodeID, Inventory{PoolID: cfg.PoolID, VCPU: cfg.VCPU, MemoryMB: cfg.MemoryMB,
		DiskGB: cfg.DiskGB, GPUs: gpus})
	if err != nil {
		return "", fmt.Errorf("join: %w", err)
	}
	if err := os.WriteFile(path, []byte(token), 0o600); err != nil {
		return "", fmt.Errorf("save credential: %w", err)
	}
	return token, nil
}
