package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/client"
)

// logServer serves an event log of n events (cursors c1…cn) as the API's
// stream does: an opening frame with `retry:` and the start cursor, then the
// events strictly after Last-Event-ID (or ?after=; with neither, the live
// feed, which here has nothing yet). Each stream ends after perStream
// events, as a server restart or the stream's lifetime ends it. ending, if
// set, is written after the events of a resumed stream that reaches the end.
type logServer struct {
	n, perStream int
	ending       string

	mu     sync.Mutex
	opened []string // per stream: how it asked to resume
}

func (s *logServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	from := 0
	resume := "live"
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		from, resume = cursorNum(id), "Last-Event-ID "+id
	} else if r.URL.Query().Has("after") {
		resume = "after=" + r.URL.Query().Get("after")
	} else {
		from = s.n // the live feed: nothing yet
	}
	s.mu.Lock()
	asked := resume + " types=" + r.URL.Query().Get("types")
	if r.URL.Query().Has("subject") {
		asked += " subject=" + r.URL.Query().Get("subject")
	}
	s.opened = append(s.opened, asked)
	s.mu.Unlock()
	if from > s.n {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		fmt.Fprint(w, `{"error":{"code":"CURSOR_EXPIRED","message":"cursor older than the retained log"}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "retry: 10\nid: c%d\n\n: heartbeat\n\n", from)
	last := min(from+s.perStream, s.n)
	for i := from + 1; i <= last; i++ {
		fmt.Fprintf(w, "id: c%d\r\nevent: site.created\r\ndata: {\"id\":\"00000000-0000-0000-0000-%012d\",\"type\":\"site.created\",\n"+
			"data: \"tenantId\":null,\"subject\":\"s%d\",\"data\":{},\"time\":\"2030-01-01T00:00:00Z\"}\r\n\r\n", i, i, i)
	}
	if last == s.n && resume != "live" {
		fmt.Fprint(w, s.ending)
	}
}

func cursorNum(c string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(c, "c"))
	return n
}

func subscribeTo(t *testing.T, s *logServer) *client.API {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	api, err := client.New(srv.URL, "bc_secret", client.Options{
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	require.NoError(t, err)
	return api
}

var errEnough = errors.New("enough")

// Streams that end are resumed with Last-Event-ID from the last event the
// handler accepted: every event once, in order, none missing, with the
// frames' multi-line data joined.
func TestSubscribeResumesWithoutGaps(t *testing.T) {
	t.Parallel()
	s := &logServer{n: 7, perStream: 2}
	api := subscribeTo(t, s)
	oldest := ""
	var got []string
	var disconnects int
	err := api.Subscribe(context.Background(), client.SubscribeOptions{After: &oldest, Types: []string{"site.created"},
		OnDisconnect: func(error, time.Duration) { disconnects++ }},
		func(ev client.Event) error {
			require.Equal(t, "site.created", ev.Type)
			require.Equal(t, "s"+strings.TrimPrefix(ev.Cursor, "c"), ev.Subject)
			require.Nil(t, ev.TenantID)
			got = append(got, ev.Cursor)
			if len(got) == 7 {
				return errEnough
			}
			return nil
		})
	require.ErrorIs(t, err, errEnough)
	require.Equal(t, []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7"}, got)
	require.Equal(t, []string{"after= types=site.created", "Last-Event-ID c2 types=site.created",
		"Last-Event-ID c4 types=site.created", "Last-Event-ID c6 types=site.created"}, s.opened)
	require.Equal(t, 3, disconnects)
}

// A subscription to one subject asks for it on every stream, the
// reconnects with Last-Event-ID included, so that it resumes the same
// filtered stream rather than the token's whole one.
func TestSubscribeKeepsItsSubjectAcrossReconnects(t *testing.T) {
	t.Parallel()
	s := &logServer{n: 3, perStream: 2}
	api := subscribeTo(t, s)
	oldest := ""
	var got []string
	err := api.Subscribe(context.Background(), client.SubscribeOptions{After: &oldest, Subject: "reservations/rsv_1"},
		func(ev client.Event) error {
			got = append(got, ev.Cursor)
			if len(got) == 3 {
				return errEnough
			}
			return nil
		})
	require.ErrorIs(t, err, errEnough)
	require.Equal(t, []string{"c1", "c2", "c3"}, got)
	require.Equal(t, []string{"after= types= subject=reservations/rsv_1",
		"Last-Event-ID c2 types= subject=reservations/rsv_1"}, s.opened)
}

// A handler's error stops the subscription, and the event it refused is
// not passed: a new subscription after the last accepted cursor gets it.
func TestSubscribeStopsOnTheHandlersError(t *testing.T) {
	t.Parallel()
	s := &logServer{n: 3, perStream: 3}
	api := subscribeTo(t, s)
	var last string
	err := api.Subscribe(context.Background(), client.SubscribeOptions{After: ptr("c0")}, func(ev client.Event) error {
		if ev.Cursor == "c2" {
			return errEnough
		}
		last = ev.Cursor
		return nil
	})
	require.ErrorIs(t, err, errEnough)
	require.Equal(t, "c1", last)
	err = api.Subscribe(context.Background(), client.SubscribeOptions{After: &last}, func(ev client.Event) error {
		require.Equal(t, "c2", ev.Cursor)
		return errEnough
	})
	require.ErrorIs(t, err, errEnough)
}

// A live subscription (no cursor) pins the start the server names in the
// opening frame, so that a reconnect loses nothing committed in between.
func TestSubscribeLiveResumesFromTheOpeningFrame(t *testing.T) {
	t.Parallel()
	s := &logServer{n: 2, perStream: 2, ending: "event: error\ndata: " +
		`{"error":{"code":"CURSOR_EXPIRED","message":"pruned"}}` + "\n\n"}
	api := subscribeTo(t, s)
	n := 0
	err := api.Subscribe(context.Background(), client.SubscribeOptions{}, func(client.Event) error { n++; return nil })
	// The live feed had nothing; the reconnect resumed after c2 (the
	// opening frame's id), where the log ends with an error frame.
	require.Equal(t, []string{"live types=", "Last-Event-ID c2 types="}, s.opened)
	require.Zero(t, n)
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, client.APIError{Code: client.ErrorCodeCURSOREXPIRED, Message: "pruned"}, *apiErr)
}

// OnResume is told every move of the resume point, in order: the opening
// frame's id, each event's cursor once the handler accepted it, and a
// heartbeat's id, which can be past the last event (events the stream
// does not show followed it). What it was told last is what the next
// reconnect resumes after.
func TestSubscribeTellsOnResumeEveryMove(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var resumed []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		resumed = append(resumed, r.Header.Get("Last-Event-ID"))
		first := len(resumed) == 1
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if !first {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"code":"UNAUTHENTICATED","message":"revoked"}}`)
			return
		}
		fmt.Fprint(w, "retry: 10\nid: c0\n\n")
		fmt.Fprint(w, "id: c1\nevent: site.created\ndata: {\"id\":\"00000000-0000-0000-0000-000000000001\","+
			"\"type\":\"site.created\",\"tenantId\":null,\"subject\":\"s1\",\"data\":{},\"time\":\"2030-01-01T00:00:00Z\"}\n\n")
		fmt.Fprint(w, ": heartbeat\nid: c5\n\n")
	}))
	t.Cleanup(srv.Close)
	api, err := client.New(srv.URL, "bc_secret", client.Options{
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	require.NoError(t, err)
	var told, events []string
	err = api.Subscribe(context.Background(), client.SubscribeOptions{Types: []string{"site.created"},
		OnResume: func(cursor string) { told = append(told, cursor) }},
		func(ev client.Event) error { events = append(events, ev.Cursor); return nil })
	require.True(t, client.IsCode(err, client.ErrorCodeUNAUTHENTICATED), "%v", err)
	require.Equal(t, []string{"c1"}, events)
	require.Equal(t, []string{"c0", "c1", "c5"}, told)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"", "c5"}, resumed, "the reconnect resumed after the heartbeat's id")
}

// An `event: error` frame ends the subscription with its typed error after
// the events before it were handled; so does a 410 when reconnecting.
func TestSubscribeEndsOnCursorExpired(t *testing.T) {
	t.Parallel()
	s := &logServer{n: 2, perStream: 5, ending: "event: error\ndata: " +
		`{"error":{"code":"CURSOR_EXPIRED","message":"the log was pruned past this stream"}}` + "\n\n"}
	api := subscribeTo(t, s)
	var got []string
	err := api.Subscribe(context.Background(), client.SubscribeOptions{After: ptr("")}, func(ev client.Event) error {
		got = append(got, ev.Cursor)
		return nil
	})
	require.True(t, client.IsCode(err, client.ErrorCodeCURSOREXPIRED), "%v", err)
	require.Equal(t, []string{"c1", "c2"}, got)

	err = api.Subscribe(context.Background(), client.SubscribeOptions{After: ptr("c9")}, func(client.Event) error { return nil })
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusGone, apiErr.Status)
	require.Equal(t, client.ErrorCodeCURSOREXPIRED, apiErr.Code)
}

// A stream that carries nothing, not even heartbeats, is ended and
// resumed.
func TestSubscribeReconnectsAnIdleStream(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	streams := 0
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		streams++
		k := streams
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if k == 1 {
			fmt.Fprint(w, "retry: 10\nid: c0\n\n")
			w.(http.Flusher).Flush()
			select { // silent, as a dead connection is
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		if id := r.Header.Get("Last-Event-ID"); id != "c0" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"code":"INVALID_ARGUMENT","message":"resumed after %q, want c0"}}`, id)
			return
		}
		fmt.Fprint(w, "id: c1\nevent: site.created\ndata: {\"type\":\"site.created\",\"subject\":\"s1\"}\n\n")
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	api, err := client.New(srv.URL, "bc_secret", client.Options{
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	require.NoError(t, err)
	var why error
	err = api.Subscribe(context.Background(), client.SubscribeOptions{IdleTimeout: 100 * time.Millisecond,
		OnDisconnect: func(err error, _ time.Duration) {
			if why == nil {
				why = err
			}
		}},
		func(ev client.Event) error {
			require.Equal(t, "s1", ev.Subject)
			return errEnough
		})
	require.ErrorIs(t, err, errEnough)
	require.ErrorContains(t, why, "idle")
}

func ptr(s string) *string { return &s }
