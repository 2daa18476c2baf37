package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/eventstream/eventstreamtest"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/testenv"
)

// The heartbeat comment follows only 15 s with nothing written, from
// either stream source (COMPUTE_STREAM_SOURCE postgres and nats): a client
// whose events come every 10 s gets none (it used to get one every 15 s
// however busy the stream was), and gets one 15 s after its last event.
func TestEventStreamHeartbeatOnlyAfterSilence(t *testing.T) {
	t.Parallel()
	pgTimer, pgStarted := eventstreamtest.ManualTimers()
	es := setupEventsBroker(t, httpapi.EventAPI{}, nil, eventstream.BrokerOptions{IdleTimer: pgTimer})
	srv := testenv.StartNATS(t)
	startJetStreamSink(t, es, srv.URL)
	s := &jetStreamEvents{eventServer: es, nats: srv}
	natsTimer, natsStarted := eventstreamtest.ManualTimers()
	js := s.natsAPIWith(t, 2, 0, eventstream.BrokerOptions{IdleTimer: natsTimer})
	_, a := s.tokenFor(t, "tenant-a", "viewer@a", core.RoleViewer)
	s.appendEvent(t, "tenant-b", "instance.running") // a log to start after

	for _, src := range []struct {
		name    string
		api     *eventServer
		started <-chan *eventstreamtest.ManualTimer
	}{{"postgres", s.eventServer, pgStarted}, {"nats", js.eventServer, natsStarted}} {
		// From the end of the log, so that the events of the first source's
		// run, which the second's broker may still be reading, are not sent.
		s.waitForwarded(t)
		c := src.api.openStream(t, a, "after="+s.list(t, s.operator, "limit=500").NextCursor, "")
		require.Equal(t, http.StatusOK, c.res.StatusCode, src.name)
		c.first(t)
		var timer *eventstreamtest.ManualTimer
		select {
		case timer = <-src.started:
		case <-time.After(eventsWait):
			t.Fatalf("%s: the stream started no heartbeat timer", src.name)
		}
		for i := range 3 {
			s.appendEvent(t, "tenant-a", "instance.running")
			f := c.first(t)
			require.Empty(t, f.comments, "%s: a heartbeat while events flowed, before event %d", src.name, i+1)
			require.Equal(t, "instance.running", f.event, src.name)
			require.Eventually(t, func() bool { return timer.Resets() == i+1 }, eventsWait, time.Millisecond,
				"%s: event %d was written, but the wait for the heartbeat did not start again (%d)", src.name, i+1, timer.Resets())
			timer.Advance(10 * time.Second)
		}
		timer.Advance(5 * time.Second) // 15 s since the last event
		f := c.first(t)
		require.Equal(t, []string{"heartbeat"}, f.comments, src.name)
		require.True(t, f.hasID, src.name)
		c.close()
	}
}
