package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Event is one event of the stream: the envelope, and the cursor that
// resumes strictly after it.
type Event struct {
	EventEnvelope
	// Cursor is the frame's SSE id: pass it as SubscribeOptions.After (or
	// GET /v1/events?after=) to continue after this event.
	Cursor string
	// Raw is the envelope as the server sent it.
	Raw json.RawMessage
}

// SubscribeOptions says where a subscription starts and how it reconnects.
type SubscribeOptions struct {
	// After is where to start: nil for the live feed (events committed from
	// now on), a pointer to "" for the oldest retained event, or a cursor
	// (an Event.Cursor, a page's nextCursor) to continue strictly after it.
	After *string
	// Types keeps only these event types; empty means every type.
	Types []string
	// Subject keeps only the events of this subject (an envelope's
	// Subject, e.g. "reservations/rsv_…"); empty means every subject. A
	// subject the token cannot see (another tenant's) streams no events,
	// as one never written about does. Every reconnect asks for the same
	// Types and Subject, so it resumes the same filtered stream.
	Subject string
	// MaxBackoff bounds the wait between reconnects; 0 means 30 s. The
	// first wait is the stream's `retry:` (3 s) or the answer's Retry-After,
	// doubling while the server stays away.
	MaxBackoff time.Duration
	// IdleTimeout ends a stream that carried nothing, not even its 15 s
	// heartbeat, for this long (a connection that died without closing),
	// and reconnects; 0 means 45 s.
	IdleTimeout time.Duration
	// OnDisconnect, when set, is told why a stream ended and how long the
	// subscriber waits before reconnecting (for a log line).
	OnDisconnect func(err error, wait time.Duration)
	// OnResume, when set, is told the cursor a reconnect would resume
	// after each time it moves: once fn accepted an event (its Cursor), and
	// when a frame without data moves it (the stream's opening frame, a
	// heartbeat's id). A heartbeat's can be past fn's last event, over
	// events outside the token's scope or Types that followed it. Save it
	// rather than the last Event.Cursor to resume later (as After, with
	// the same Types and Subject): it misses nothing, and it stays valid under
	// retention however long the subscription's own events stay quiet,
	// where the last event's cursor expires with that event.
	OnResume func(cursor string)
}

// Defaults of SubscribeOptions and of the stream.
const (
	defaultStreamMaxBackoff = 30 * time.Second
	defaultStreamIdle       = 45 * time.Second
	defaultStreamRetry      = 3 * time.Second
)

// errStreamEnded is why a stream the server closed cleanly is reconnected.
var errStreamEnded = errors.New("event stream ended")

// Subscribe streams the events the token may see to fn, in log order, until
// ctx ends, fn returns an error, or the server refuses the subscription for
// good. When a stream ends (the server restarts, the stream reaches its
// lifetime, the network fails) it reconnects with backoff and resumes with
// Last-Event-ID from the last event fn accepted, so fn sees every event
// once per subscription, with no gap (delivery is still at least once
// across subscriptions: deduplicate by the envelope's id).
//
// It returns ctx's error, fn's error, or an *APIError that retrying would
// not cure: UNAUTHENTICATED (a revoked token), PERMISSION_DENIED,
// TENANT_SUSPENDED (until an operator resumes the tenant, every reconnect
// is refused), INVALID_ARGUMENT, NOT_FOUND, METHOD_NOT_ALLOWED (a server
// without the stream), and CURSOR_EXPIRED, whether answered to the
// request or sent as the stream's `event: error` frame when retention
// pruned the log past it (then list again from the oldest event and re-read
// the state derived from events).
func (a *API) Subscribe(ctx context.Context, opts SubscribeOptions, fn func(Event) error) error {
	maxBackoff := cmpOr(opts.MaxBackoff, defaultStreamMaxBackoff)
	s := &subscription{api: a, opts: opts, fn: fn, retry: defaultStreamRetry}
	if opts.After != nil {
		s.cursor, s.haveCursor = *opts.After, true
	}
	failures := 0
	for {
		opened, err := s.run(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var apiErr *APIError
		if errors.As(err, &apiErr) && final(apiErr) {
			return err
		}
		var fnErr *handlerError
		if errors.As(err, &fnErr) {
			return fnErr.err
		}
		if opened {
			failures = 0
		}
		wait := min(s.retry<<min(failures, 10), maxBackoff)
		wait = wait/2 + rand.N(wait/2+1)
		if apiErr != nil && apiErr.RetryAfter > wait {
			wait = apiErr.RetryAfter
		}
		failures++
		if opts.OnDisconnect != nil {
			opts.OnDisconnect(err, wait)
		}
		if err := a.doer.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// final reports whether reconnecting cannot cure err.
func final(err *APIError) bool {
	switch err.Code {
	case ErrorCodeUNAUTHENTICATED, ErrorCodePERMISSIONDENIED, ErrorCodeTENANTSUSPENDED, ErrorCodeINVALIDARGUMENT,
		ErrorCodeNOTFOUND, ErrorCodeMETHODNOTALLOWED, ErrorCodeCURSOREXPIRED:
		return true
	}
	return err.Status == http.StatusGone
}

// handlerError carries the handler's own error out of run, to tell it from
// the stream's.
type handlerError struct{ err error }

func (e *handlerError) Error() string { return e.err.Error() }

// subscription is the state one Subscribe carries across its streams.
type subscription struct {
	api  *API
	opts SubscribeOptions
	fn   func(Event) error
	// cursor is what the next stream resumes after: the last event fn
	// accepted, or the start the server named when the stream opened (so
	// that a reconnect of a live subscription loses nothing either).
	cursor     string
	haveCursor bool
	retry      time.Duration
}

// run opens one stream and reads it until it ends. opened reports whether
// the server accepted it.
func (s *subscription) run(ctx context.Context) (opened bool, err error) {
	params := &StreamEventsParams{}
	if s.haveCursor {
		c := s.cursor
		if c == "" {
			params.After = &c // from the oldest retained event
		} else {
			params.LastEventID = &c
		}
	}
	if len(s.opts.Types) > 0 {
		types := EventTypes(s.opts.Types)
		params.Types = &types
	}
	if s.opts.Subject != "" {
		subject := s.opts.Subject
		params.Subject = &subject
	}
	req, err := NewStreamEventsRequest(s.api.server, params)
	if err != nil {
		return false, err
	}
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	req = req.WithContext(streamCtx)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := s.api.doer.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return true, fmt.Errorf("event stream: unexpected Content-Type %q", ct)
	}
	// A connection that died without closing carries no heartbeat: end it.
	idle := cmpOr(s.opts.IdleTimeout, defaultStreamIdle)
	watchdog := time.AfterFunc(idle, cancel)
	defer watchdog.Stop()
	err = s.read(resp.Body, func() { watchdog.Reset(idle) })
	var apiErr *APIError
	var fnErr *handlerError
	switch {
	case errors.As(err, &apiErr), errors.As(err, &fnErr):
		return true, err
	case streamCtx.Err() != nil && ctx.Err() == nil:
		return true, fmt.Errorf("event stream idle for %s: %w", idle, errStreamEnded)
	case err == nil:
		return true, errStreamEnded
	}
	return true, err
}

// read parses the frames of one stream (WHATWG server-sent events: field
// lines, a blank line ends a frame, lines starting with ':' are comments)
// and hands each event to fn. It returns nil at the end of the stream.
func (s *subscription) read(body io.Reader, alive func()) error {
	r := bufio.NewReader(body)
	var id, event string
	var data strings.Builder
	hasID, hasData := false, false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				return nil // a partial frame at the end is dropped, as EventSource does
			}
			return err
		}
		alive()
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if err := s.dispatch(id, hasID, event, data.String(), hasData); err != nil {
				return err
			}
			id, event, hasID, hasData = "", "", false, false
			data.Reset()
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			id, hasID = value, true
		case "event":
			event = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		case "retry":
			if ms, err := strconv.Atoi(value); err == nil && ms > 0 {
				s.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

// dispatch acts on one frame: an event goes to fn, and only once fn
// accepted it does the cursor move past it; a frame with an id and no data
// (the stream's opening frame) sets where a reconnect resumes; an `event:
// error` frame ends the subscription with its error.
func (s *subscription) dispatch(id string, hasID bool, event, data string, hasData bool) error {
	if event == "error" {
		env, ok := parseEnvelope([]byte(data))
		if !ok {
			return fmt.Errorf("event stream: error frame without an error envelope: %q", data)
		}
		return &APIError{Code: env.Error.Code, Message: env.Error.Message}
	}
	if !hasData {
		if hasID {
			s.resumeAfter(id)
		}
		return nil
	}
	var ev Event
	if err := json.Unmarshal([]byte(data), &ev.EventEnvelope); err != nil {
		return fmt.Errorf("event stream: event %s: %w", id, err)
	}
	ev.Cursor, ev.Raw = id, json.RawMessage(data)
	if ev.Type == "" {
		ev.Type = event
	}
	if err := s.fn(ev); err != nil {
		return &handlerError{err: err}
	}
	if hasID {
		s.resumeAfter(id)
	}
	return nil
}

// resumeAfter moves the cursor the next stream resumes after, and tells
// OnResume.
func (s *subscription) resumeAfter(cursor string) {
	s.cursor, s.haveCursor = cursor, true
	if s.opts.OnResume != nil {
		s.opts.OnResume(cursor)
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
