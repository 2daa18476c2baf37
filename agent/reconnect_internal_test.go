package agent

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// The first failed attempts in a row retry at the configured delay; then
// the wait doubles, up to 30 times the delay.
func TestReconnectWaitBacksOff(t *testing.T) {
	var got []time.Duration
	for failures := 0; failures <= 10; failures++ {
		got = append(got, reconnectWait(time.Second, failures))
	}
	s := time.Second
	require.Equal(t, []time.Duration{s, s, s, s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, 30 * s}, got)
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
