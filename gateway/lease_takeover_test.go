package gateway_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
)

// periodTicks stands in for Run's tickers and fires those of one period.
type periodTicks struct {
	mu sync.Mutex
	ch map[time.Duration][]chan time.Time
}

func (p *periodTicks) tick(every time.Duration) (<-chan time.Time, func()) {
	c := make(chan time.Time, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch == nil {
		p.ch = map[time.Duration][]chan time.Time{}
	}
	p.ch[every] = append(p.ch[every], c)
	return c, func() {}
}

// fire delivers one tick to each ticker whose period is under most.
func (p *periodTicks) fire(most time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for every, cs := range p.ch {
		if every >= most {
			continue
		}
		for _, c := range cs {
			select {
			case c <- time.Time{}:
			default:
			}
		}
	}
}

// syncBuffer is a log both the gateway and the test use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A gateway started again after its process crashed waits for the dead
// process's lease to lapse, answering its daemons 503 meanwhile. It takes
// the lease within a second of the lapse, not at its next renewal up to
// lease.RenewEvery later: every node of the gateway waits for it
// (measured with real processes: the lease taken 4.5 s after it lapsed).
func TestRestartedGatewayTakesItsLeaseAsSoonAsItLapses(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// The crashed process: it neither renews nor releases.
	_, err := lease.Acquire(f.ctx, db.New(f.d.Pool), gateway.GatewayLeaseName("gw1"), "gw1-dead", lease.GatewayTTL)
	require.NoError(t, err)

	logs := &syncBuffer{}
	ticks := &periodTicks{}
	g := &gateway.Gateway{ID: "gw1", Owner: "gw1-second", Commands: f.s, Tick: ticks.tick,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}
	ctx, cancel := context.WithCancel(f.ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); g.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran })
	held := func() bool {
		var n int
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM leases WHERE name = $1 AND owner = $2 AND expires_at > compute_now()",
			gateway.GatewayLeaseName("gw1"), "gw1-second").Scan(&n))
		return n == 1
	}
	// Run's first attempt finds the lease held by the dead process.
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), lease.ErrNotAcquired.Error()) },
		10*time.Second, 5*time.Millisecond)
	require.False(t, held())

	// The dead process's lease lapses; a second passes, not a renewal period.
	f.d.AdvanceSimClock(t, lease.GatewayTTL+time.Millisecond)
	require.Eventually(t, func() bool { ticks.fire(lease.RenewEvery); return held() }, 10*time.Second, 20*time.Millisecond,
		"the lease taken within a second of its lapse")
}
