package gateway_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/wire"
)

// allocatable reads a node's allocatable scalars by resource.
func (f *fixture) allocatable(node string) map[string]int64 {
	f.t.Helper()
	rows, err := f.d.Pool.Query(f.ctx, "SELECT resource, allocatable FROM node_resources WHERE node_id = $1", node)
	require.NoError(f.t, err)
	out := map[string]int64{}
	for rows.Next() {
		var r string
		var a int64
		require.NoError(f.t, rows.Scan(&r, &a))
		out[r] = a
	}
	require.NoError(f.t, rows.Err())
	return out
}

// A daemon restarted with --vcpu 4 --memory-mb 4096 after its node joined
// with 64 and 512 GiB says so in its inventory message (its "scalars", the
// flags given; disk was not): the node's record takes them, which the
// placer books against, and node.inventory_reconciled records the change.
func TestInventoryMessageScalarsAreAdopted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal") // 64 vCPU, 512 GiB, 2000 GB
	_, url := f.liveGateway("gw1")
	ws, _ := f.connect(url, cred.Token)

	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	payload := []byte(`{"assignments":null,"instances":null,"observedGeneration":0,` +
		`"gpus":[{"uuid":"GPU-n1-0","model":"h100","memoryMb":81559},{"uuid":"GPU-n1-1","model":"h100","memoryMb":81559}],` +
		`"scalars":{"vcpu":4,"memoryMb":4096}}`)
	msg, err := json.Marshal(wire.Message{Type: wire.TypeInventory, JournalID: "j1", Payload: payload})
	require.NoError(t, err)
	require.NoError(t, ws.Write(ctx, websocket.MessageText, msg))

	require.Eventually(t, func() bool { return f.allocatable("n1")["vcpu"] == 4 }, 10*time.Second, 10*time.Millisecond,
		"the node keeps the vCPUs of its first join: %v", f.allocatable("n1"))
	require.Equal(t, map[string]int64{"vcpu": 4, "memory": 4096, "disk": 2000}, f.allocatable("n1"))
	require.Equal(t, 1, f.events(core.EventNodeInventoryReconciled, "n1"))
	require.Empty(t, f.conditions("n1"))
	f.requireInvariants()
}
