package agent

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A gateway that crashed (SIGKILL, a lost machine) and was started again
// answers 503 until its predecessor's lease lapses, 20 s after its last
// renewal, and takes it at its next renewal, 5 s later at most. The daemon
// dials it again within about one reconnect delay of that, not after
// backing off to 16 or 30 s: measured before, a SIGKILLed `compute serve`
// that was restarted at once had its nodes back after 31 to 36 s although
// its gateway served from about 21 s.
func TestDaemonDialsARestartedGatewayAsSoonAsItServes(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	serves := t0.Add(20*time.Second + 5*time.Second) // gateway lease TTL, then one renewal period
	clock := &fakeClock{now: t0}
	var mu sync.Mutex
	var dials []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		dials = append(dials, clock.Now())
		mu.Unlock()
		http.Error(w, "gateway does not hold its lease", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	last := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return dials[len(dials)-1]
	}
	cfg := Config{NodeID: "n1", StateDir: t.TempDir(), GatewayURLs: []string{"ws://" + strings.TrimPrefix(srv.URL, "http://")},
		ReconnectDelay: time.Second}
	d := &daemon{cfg: cfg, token: "bcn_x", log: slog.New(slog.DiscardHandler), now: clock.Now}
	d.sleepFunc = func(_ context.Context, dur time.Duration) bool {
		clock.advance(dur)
		return last().Before(serves)
	}
	d.keepSession(context.Background(), context.Background())

	// One reconnect delay, jittered by up to 20 %.
	require.False(t, last().After(serves.Add(1200*time.Millisecond)),
		"first dial after the gateway serves again at %s: %s", serves.Sub(t0), last().Sub(t0))
}
