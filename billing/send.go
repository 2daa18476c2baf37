package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

// HeaderIdempotencyKey carries the window's key besides webhook-id, for
// receivers that deduplicate requests by Idempotency-Key.
const HeaderIdempotencyKey = "Idempotency-Key"

// result is what one attempt produced: a status, or err when no response
// arrived.
type result struct {
	status     int
	retryAfter time.Duration
	location   string // a redirect's Location, which is not followed
	err        error
}

func (r result) ok() bool { return r.err == nil && r.status >= 200 && r.status < 300 }

func (r result) statusPtr() *int32 {
	if r.err != nil || r.status == 0 {
		return nil
	}
	s := int32(r.status)
	return &s
}

func (r result) errText() string {
	switch {
	case r.err != nil:
		return r.err.Error()
	case r.status >= 300 && r.status < 400 && r.location != "":
		return fmt.Sprintf("HTTP %d, redirect to %s not followed", r.status, redirectTarget(r.location))
	case !r.ok():
		return fmt.Sprintf("HTTP %d", r.status)
	}
	return ""
}

// post makes one signed attempt at a window. The body is the window as
// GET /v1/usage-windows shows it; webhook-id and Idempotency-Key are its
// key, so every retry of it is recognisably the same. The signature's
// timestamp is business time (compute_now()), as webhooks sign.
func (s *Sink) post(ctx context.Context, w queries.UsageWindow, now time.Time) result {
	body, err := json.Marshal(w)
	if err != nil {
		return result{err: fmt.Errorf("encode window: %w", err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return result{err: fmt.Errorf("build request: %w", err)}
	}
	if err := webhook.SetHeaders(req.Header, []string{s.cfg.Secret}, w.Key, now, body); err != nil {
		return result{err: fmt.Errorf("sign: %w", err)}
	}
	req.Header.Set(HeaderIdempotencyKey, w.Key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "BetterCompute-Billing/1.0")
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return result{err: withoutURLSecrets(err)}
	}
	defer resp.Body.Close()
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10) // let the connection be reused
	r := result{status: resp.StatusCode, location: resp.Header.Get("Location")}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		r.retryAfter = retryAfter(resp.Header.Get("Retry-After"), now)
	}
	return r
}

// redirectTarget says where a redirect pointed without what its path or
// query may carry (an http-to-https redirect repeats the URL's credential):
// the scheme and host, or that it stays on the same host.
func redirectTarget(location string) string {
	u, err := url.Parse(location)
	switch {
	case err != nil:
		return "an unparsable Location"
	case u.Host == "":
		return "another path on the same host"
	}
	return u.Scheme + "://" + u.Host
}

// withoutURLSecrets is err with the request's URL cut to its scheme and
// host: a billing URL often carries the receiver's credential in its path
// or query, and the error goes to billing_deliveries.last_error and the
// log on every failed attempt. The cause (refused, timeout, TLS) stays.
func withoutURLSecrets(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	where := "the billing URL"
	if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
		where = u.Scheme + "://" + u.Host
	}
	return fmt.Errorf("%s %s: %w", ue.Op, where, ue.Err)
}

// retryAfter reads Retry-After as delay-seconds or an HTTP date, relative
// to now; 0 when absent or malformed.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs > 0 {
		return time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter)
	}
	return 0
}
