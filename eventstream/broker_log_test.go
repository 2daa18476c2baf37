package eventstream_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/outbox"
)

// outageSource is a Source whose live reads fail while down is set.
type outageSource struct {
	eventstream.Source // Page and CheckCursor: not called here

	mu   sync.Mutex
	down bool
}

func (s *outageSource) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (*outageSource) Head(context.Context) (outbox.Position, error) { return outbox.Position{}, nil }

func (s *outageSource) ReadAfter(context.Context, outbox.Position, int) ([]outbox.Stored, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, errors.New("read outbox: failed to connect")
	}
	return nil, nil
}

// A database outage is three lines of the broker's log, not one a poll:
// it polled once a second and logged every failed poll.
func TestBrokerLogsAnOutageOnceNotEveryPoll(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		src := &outageSource{}
		var out testenv.LogBuffer
		b := eventstream.NewSourceBroker(src, eventstream.BrokerOptions{Logger: slog.New(slog.NewJSONHandler(&out, nil))})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); b.Run(ctx, time.Second, nil) }()
		synctest.Wait()

		src.setDown(true)
		time.Sleep(90 * time.Second) // the simulated clock: 90 polls fail
		synctest.Wait()
		src.setDown(false)
		time.Sleep(time.Second)
		synctest.Wait()
		cancel()
		<-done

		require.Equal(t, []string{
			"ERROR event broker poll",
			"ERROR event broker poll: still failing",
			"INFO event broker poll: recovered",
		}, out.LevelsAndMessages(t))
	})
}
