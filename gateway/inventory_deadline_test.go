package gateway_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/wire"
)

// A daemon that keeps its session alive with heartbeats but never reports
// what it holds would have its node's assigns held for the session's life
// (TestAssignWaitsForTheDaemonsInventory): the gateway's flush ends such a
// session once gateway.InventoryDeadline has passed since its welcome, and
// keeps the session of a daemon that reported.
func TestSessionWithoutInventoryEnds(t *testing.T) {
	t.Parallel()
	f := setup(t)
	mute := f.join("n1", "metal")
	reporting := f.join("n2", "metal")
	var mu sync.Mutex
	now := time.Now()
	g := &gateway.Gateway{ID: "gw1", Owner: "gw1-process", Commands: f.s, Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}}
	require.NoError(t, g.Renew(f.ctx))
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	url := "ws://" + strings.TrimPrefix(srv.URL, "http://") + wire.Path

	muteDaemon, _, _ := f.wireDaemonUnreported(url, mute.Token)
	reportingDaemon, epoch, _ := f.wireDaemonUnreported(url, reporting.Token)
	st, err := json.Marshal(wire.NodeState{GPUs: []wire.InventoryGPU{{UUID: "GPU-n2-0", Model: "h100", MemoryMB: 81920},
		{UUID: "GPU-n2-1", Model: "h100", MemoryMB: 81920}}, Assignments: []wire.AssignPayload{}})
	require.NoError(t, err)
	reportingDaemon.send(wire.Message{Type: wire.TypeInventory, JournalID: "j1", Payload: st})
	require.Eventually(t, func() bool { return f.session("n2").InventoryReconciledEpoch != nil }, 10*time.Second,
		5*time.Millisecond)

	advance := func(d time.Duration) {
		mu.Lock()
		now = now.Add(d)
		mu.Unlock()
	}
	advance(gateway.InventoryDeadline)
	require.NoError(t, g.Flush(f.ctx))
	require.Len(t, g.Sessions(), 2, "both sessions kept until the deadline has passed")

	advance(time.Second)
	require.NoError(t, g.Flush(f.ctx))
	require.Equal(t, map[string]int64{"n2": epoch}, g.Sessions(), "the mute daemon's session ended")
	require.False(t, f.session("n1").Connected)
	require.True(t, f.session("n2").Connected)
	for range muteDaemon.msgs { // the gateway closed the connection
	}
}
