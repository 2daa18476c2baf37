package agent_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/agent"
)

// A daemon stopped while it starts (compute serve --demo whose API port
// was taken: its daemons had started and were stopped at once) returns
// quietly. Its isolation check, cut short by the stop ("runc --version:
// context canceled"), logged ERROR "workloads will be refused: this node
// cannot isolate them" three times, sending the reader after runc instead
// of the port.
func TestDaemonStoppedWhileStartingLogsNoIsolationFailure(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	err := agent.Run(ctx, agent.Config{NodeID: "n-stopped", StateDir: filepath.Join(dir, "state"),
		GatewayURLs: []string{"ws://127.0.0.1:1"}, FakeGPUs: "1xH100-80GB", VCPU: 4, MemoryMB: 4096, DiskGB: 10,
		WorkloadDir: filepath.Join(dir, "workloads"), WorkloadIsolation: agent.IsolationContainer,
		Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	require.NotContains(t, buf.String(), "cannot isolate", buf.String())
	require.NoError(t, err)
}
