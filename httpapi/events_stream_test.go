package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// sseFrame is one Server-Sent Events frame as a client parses it.
type sseFrame struct {
	id, event, data, retry string
	comments               []string
	hasID                  bool
}

// sseClient reads frames from a stream in the background.
type sseClient struct {
	res    *http.Response
	frames chan sseFrame
	cancel context.CancelFunc
}

func (s *eventServer) openStream(t *testing.T, token, query, lastEventID string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/v1/events/stream?"+query, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	c := &sseClient{res: res, frames: make(chan sseFrame, 1000), cancel: cancel}
	t.Cleanup(c.close)
	if res.StatusCode != http.StatusOK {
		return c
	}
	go func() {
		defer close(c.frames)
		sc := bufio.NewScanner(res.Body)
		var f sseFrame
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				c.frames <- f
				f = sseFrame{}
				continue
			}
			if rest, ok := strings.CutPrefix(line, ":"); ok {
				f.comments = append(f.comments, strings.TrimSpace(rest))
				continue
			}
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				f.id, f.hasID = value, true
			case "event":
				f.event = value
			case "data":
				f.data += value
			case "retry":
				f.retry = value
			}
		}
	}()
	return c
}

func (c *sseClient) close() {
	c.cancel()
	_ = c.res.Body.Close()
}

// next returns the next frame that is an event (has data), failing the
// test after eventsWait.
func (c *sseClient) next(t *testing.T) sseFrame {
	t.Helper()
	for {
		select {
		case f, ok := <-c.frames:
			require.True(t, ok, "the stream ended")
			if f.data != "" {
				return f
			}
		case <-time.After(eventsWait):
			t.Fatal("no event within the wait")
		}
	}
}

// events reads n events and returns their envelopes and ids (cursors).
func (c *sseClient) events(t *testing.T, n int) ([]uuid.UUID, []string) {
	t.Helper()
	var ids []uuid.UUID
	var cursors []string
	for range n {
		f := c.next(t)
		var e core.Event
		require.NoError(t, json.Unmarshal([]byte(f.data), &e))
		require.Equal(t, e.Type, f.event, "event: is the type")
		if len(cursors) > 0 {
			require.Less(t, cursors[len(cursors)-1], f.id, "ids increase")
		}
		ids = append(ids, e.ID)
		cursors = append(cursors, f.id)
	}
	return ids, cursors
}

// first reads the stream's opening frame: the retry hint and the start id.
func (c *sseClient) first(t *testing.T) sseFrame {
	t.Helper()
	select {
	case f := <-c.frames:
		return f
	case <-time.After(eventsWait):
		t.Fatal("no opening frame")
	}
	return sseFrame{}
}

// The test: a client reads k events and disconnects; reconnecting
// with Last-Event-ID = the k-th id yields exactly the events after k, in
// order: the ones it had not read yet, the ones appended while it was away
// and live ones appended after it came back.
func TestEventStreamResumesAfterLastEventID(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, 0)
	_, a := s.tokenFor(t, "tenant-a", "viewer@a", core.RoleViewer)
	var want []uuid.UUID
	for range 3 {
		want = append(want, s.appendEvent(t, "tenant-a", "instance.requested"))
	}

	c1 := s.openStream(t, a, "after=", "") // from the start of the log
	require.Equal(t, http.StatusOK, c1.res.StatusCode)
	require.Equal(t, "text/event-stream", c1.res.Header.Get("Content-Type"))
	require.Equal(t, "no-cache", c1.res.Header.Get("Cache-Control"))
	open := c1.first(t)
	require.Equal(t, "3000", open.retry)
	require.True(t, open.hasID, "the opening frame carries the start position")
	require.Equal(t, strings.Repeat("0", 32), open.id)

	want = append(want, s.appendEvent(t, "tenant-a", "instance.stopped"))   // live
	want = append(want, s.appendEvent(t, "tenant-a", "instance.requested")) // live, not read
	const k = 4
	got, cursors := c1.events(t, k)
	require.Equal(t, want[:k], got)
	c1.close()
	require.Eventually(t, func() bool { return s.broker.Streams() == 0 }, eventsWait, time.Millisecond,
		"the server notices the client went away and unsubscribes it")

	s.appendEvent(t, "tenant-b", "instance.requested") // never A's
	want = append(want, s.appendEvent(t, "tenant-a", "instance.requested"), s.appendEvent(t, "tenant-a", "instance.stopped"))

	// EventSource reconnects to the original URL, so the header must win
	// over the stale ?after=.
	c2 := s.openStream(t, a, "after=", cursors[k-1])
	require.Equal(t, http.StatusOK, c2.res.StatusCode)
	require.Equal(t, cursors[k-1], c2.first(t).id)
	got, _ = c2.events(t, 3)
	require.Equal(t, want[k:k+3], got, "the unread live event, then the ones appended while away")
	want = append(want, s.appendEvent(t, "tenant-a", "instance.requested"))
	got, _ = c2.events(t, 1)
	require.Equal(t, want[k+3:], got, "then live")
}

// Operators' streams see every tenant; tenants' streams only their own;
// the types filter applies per stream.
func TestEventStreamScoping(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, 0)
	_, a := s.tokenFor(t, "tenant-a", "viewer@a", core.RoleViewer)
	_, b := s.tokenFor(t, "tenant-b", "viewer@b", core.RoleViewer)
	ca, cb := s.openStream(t, a, "", ""), s.openStream(t, b, "", "")
	cops := s.openStream(t, s.operator, "", "")
	cdel := s.openStream(t, a, "types=instance.stopped", "")
	for _, c := range []*sseClient{ca, cb, cops, cdel} {
		require.Equal(t, http.StatusOK, c.res.StatusCode)
		c.first(t)
	}
	require.Eventually(t, func() bool { return s.broker.Streams() == 4 }, eventsWait, time.Millisecond)

	bEvent := s.appendEvent(t, "tenant-b", "instance.requested")
	aCreated := s.appendEvent(t, "tenant-a", "instance.requested")
	aDeleted := s.appendEvent(t, "tenant-a", "instance.stopped")
	got, _ := ca.events(t, 2)
	require.Equal(t, []uuid.UUID{aCreated, aDeleted}, got)
	got, _ = cb.events(t, 1)
	require.Equal(t, []uuid.UUID{bEvent}, got)
	got, _ = cops.events(t, 3)
	require.Equal(t, []uuid.UUID{bEvent, aCreated, aDeleted}, got)
	got, _ = cdel.events(t, 1)
	require.Equal(t, []uuid.UUID{aDeleted}, got)
}

// An idle stream carries comment heartbeats; closing the broker (server
// shutdown) ends the stream cleanly.
func TestEventStreamHeartbeatAndShutdown(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, 5*time.Millisecond)
	c := s.openStream(t, s.operator, "", "")
	require.Equal(t, http.StatusOK, c.res.StatusCode)
	for {
		f := c.first(t)
		if len(f.comments) > 0 {
			require.Equal(t, []string{"heartbeat"}, f.comments)
			break
		}
	}
	s.broker.Close()
	for range c.frames { // drains until the server ends the response
	}
}

// Errors come before the stream starts, as JSON: a malformed cursor is 400
// and a pruned one 410.
func TestEventStreamRejectsBadCursors(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, 0)
	s.appendEvent(t, "tenant-a", "instance.requested")
	s.appendEvent(t, "tenant-a", "instance.requested")
	page := s.waitListed(t, s.operator, 2)
	first := s.list(t, s.operator, "limit=1").NextCursor
	_, err := s.pg.Pool.Exec(context.Background(), "DELETE FROM outbox WHERE id = $1", page.Items[0].ID)
	require.NoError(t, err)

	for _, tc := range []struct {
		query, lastEventID string
		status             int
		code               core.Code
	}{
		{"", "bogus", http.StatusBadRequest, core.CodeInvalidArgument},
		{"after=bogus", "", http.StatusBadRequest, core.CodeInvalidArgument},
		{"", first, http.StatusGone, core.CodeCursorExpired},
		{"after=" + first, "", http.StatusGone, core.CodeCursorExpired},
	} {
		c := s.openStream(t, s.operator, tc.query, tc.lastEventID)
		require.Equal(t, tc.status, c.res.StatusCode, "%+v", tc)
		var body struct{ Error struct{ Code core.Code } }
		require.NoError(t, json.NewDecoder(c.res.Body).Decode(&body))
		require.Equal(t, tc.code, body.Error.Code, "%+v", tc)
	}
	require.Zero(t, s.broker.Streams())
}

// Two Last-Event-ID headers are refused, like two If-Match or two
// ?after=: the stream used to resume after the first and drop the second
// without a word, so which events a client got depended on the order a
// proxy kept them in.
func TestEventStreamRefusesTwoLastEventIDs(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, 0)
	s.appendEvent(t, "tenant-a", "instance.requested")
	s.appendEvent(t, "tenant-a", "instance.requested")
	page := s.waitListed(t, s.operator, 2)
	first := s.list(t, s.operator, "limit=1").NextCursor
	require.Len(t, page.Items, 2)

	req, err := http.NewRequest(http.MethodGet, s.url+"/v1/events/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.operator)
	req.Header.Add("Last-Event-ID", first)
	req.Header.Add("Last-Event-ID", first)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	var body struct {
		Error struct {
			Code    core.Code
			Message string
		}
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	require.Equal(t, core.CodeInvalidArgument, body.Error.Code)
	require.Equal(t, "Last-Event-ID is given 2 times; give it once", body.Error.Message)
	require.Zero(t, s.broker.Streams())
}
