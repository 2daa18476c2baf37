package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// APIError is an answer of the server that is not 2xx: the error envelope
// ({"error":{"code","message"}}) with what the response said around it.
// Switch on Code (the spec's ErrorCode values, such as ErrorCodeCONFLICT);
// Message is for people. An answer without an envelope (a proxy's 502,
// say) has an empty Code and the start of its body as Message.
type APIError struct {
	// Status is the HTTP status; 0 for an error that arrived inside an
	// event stream (an `event: error` frame).
	Status int
	// Code is the envelope's code.
	Code ErrorCode
	// Message is the envelope's message, safe to show.
	Message string
	// RetryAfter is the Retry-After header (429, 503): how long to wait
	// before trying again. 0 when absent.
	RetryAfter time.Duration
	// RequestID is the X-Request-Id header, to quote when asking about it.
	RequestID string
}

func (e *APIError) Error() string {
	var b strings.Builder
	if e.Code != "" {
		b.WriteString(string(e.Code))
	} else {
		fmt.Fprintf(&b, "HTTP %d", e.Status)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// IsCode reports whether err is, or wraps, an *APIError with code.
func IsCode(err error, code ErrorCode) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == code
}

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// errorFrom builds the APIError of a response whose body was read into
// body.
func errorFrom(resp *http.Response, body []byte, now time.Time) *APIError {
	e := &APIError{
		Status:     resp.StatusCode,
		RequestID:  resp.Header.Get("X-Request-Id"),
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), now),
	}
	if env, ok := parseEnvelope(body); ok {
		e.Code, e.Message = env.Error.Code, env.Error.Message
		return e
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200]
		for !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
		msg += "…"
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	e.Message = msg
	return e
}

// parseEnvelope decodes the API's error envelope; ok is false when body is
// not one.
func parseEnvelope(body []byte) (Error, bool) {
	var env Error
	if err := json.Unmarshal(body, &env); err != nil || env.Error.Code == "" {
		return Error{}, false
	}
	return env, true
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date.
// Anything else, or a time in the past, is 0.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, 24*3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
