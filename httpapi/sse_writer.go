// The frames of an event stream as Server-Sent Events: events, the error
// that ends a stream, heartbeats; each write flushed and bounded by a
// deadline.

package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/outbox"
)

// errClientGone wraps a failed write: the connection is broken or the
// client stopped reading for longer than the write timeout.
var errClientGone = errors.New("event stream client gone")

// sseWriter writes Server-Sent Events frames and flushes each one, each
// write bounded by a deadline.
type sseWriter struct {
	res     *echo.Response
	rc      *http.ResponseController
	timeout time.Duration
}

func newSSEWriter(res *echo.Response, timeout time.Duration) *sseWriter {
	return &sseWriter{res: res, rc: http.NewResponseController(res), timeout: timeout}
}

// event writes one event: the cursor as id, the type as event name, the
// envelope as data (json.Marshal escapes newlines, so it is one line).
func (w *sseWriter) event(e outbox.Stored) error {
	data, err := json.Marshal(e.Event)
	if err != nil {
		return fmt.Errorf("encode event %s: %w", e.ID, err)
	}
	return w.write(fmt.Sprintf("id: %s\nevent: %s\ndata: %s\n\n", e.Position, sseField(e.Type), data))
}

// streamError writes the frame that ends a stream for a reason the client
// must act on: `event: error` with the API's error envelope as data
// ({"error":{"code":"CURSOR_EXPIRED","message":"…"}}). It carries no id, so
// the client's last event id stays at the last event it received.
func (w *sseWriter) streamError(err error) error {
	_, detail := classify(err)
	data, merr := json.Marshal(ErrorBody{Error: detail})
	if merr != nil {
		return fmt.Errorf("encode stream error: %w", merr)
	}
	return w.write(fmt.Sprintf("event: error\ndata: %s\n\n", data))
}

// heartbeat writes a comment line, which EventSource ignores, and the id
// a reconnect resumes after, which sets EventSource's last event id
// without an event (a frame without data). That id can be past the
// client's own last event: an idle stream's cursor follows the log, so it
// stays valid under retention (Stream.Deliver).
func (w *sseWriter) heartbeat(resume outbox.Position) error {
	return w.write(fmt.Sprintf(": heartbeat\nid: %s\n\n", resume))
}

func (w *sseWriter) write(frame string) error {
	// ErrNotSupported (a writer without deadlines) just means no bound.
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	if _, err := w.res.Write([]byte(frame)); err != nil {
		return fmt.Errorf("%w: %v", errClientGone, err)
	}
	if err := w.rc.Flush(); err != nil {
		return fmt.Errorf("%w: %v", errClientGone, err)
	}
	return nil
}

// sseField keeps a value on one line: a CR or LF would end the field and
// let the rest be read as another field.
func sseField(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
