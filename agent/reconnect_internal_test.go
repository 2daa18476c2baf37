package agent

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// Failed attempts in a row retry at the configured delay for as long as
// a restarted gateway takes to serve again (3 + 30 of them at 1 s); then
// the wait doubles, up to 30 times the delay.
func TestReconnectWaitBacksOff(t *testing.T) {
	s := time.Second
	for failures := 0; failures <= 33; failures++ {
		require.Equal(t, s, reconnectWait(s, failures), "after %d failures", failures)
	}
	var got []time.Duration
	for failures := 34; failures <= 40; failures++ {
		got = append(got, reconnectWait(s, failures))
	}
	require.Equal(t, []time.Duration{2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, 30 * s}, got)
	for range 100 {
		j := jittered(10 * time.Second)
		require.True(t, j >= 8*time.Second && j <= 12*time.Second, "%s", j)
	}
}

// A session the gateway dropped for a newer one of the node is told apart
// from other ends (the daemon then backs off: another daemon may hold the
// node's credential).
func TestSupersededByAnother(t *testing.T) {
	require.True(t, supersededByAnother(fmt.Errorf("receive: %w",
		websocket.CloseError{Code: websocket.StatusPolicyViolation, Reason: "session superseded"})))
	require.False(t, supersededByAnother(websocket.CloseError{Code: websocket.StatusGoingAway, Reason: "gateway stopping"}))
	require.False(t, supersededByAnother(errors.New("dial: connection refused")))
}
