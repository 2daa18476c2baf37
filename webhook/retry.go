package webhook

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter caps a receiver's Retry-After: a header asking for a year
// must not park a delivery past the point where the endpoint would be
// disabled anyway.
const maxRetryAfter = 24 * time.Hour

// attemptResult is what one HTTP attempt produced. status is 0 when no
// response arrived (refused, timed out, forbidden address).
type attemptResult struct {
	status  int
	header  http.Header
	latency time.Duration
	snippet string
	err     error
}

func (r attemptResult) succeeded() bool { return r.err == nil && r.status >= 200 && r.status < 300 }

// gone is Standard Webhooks' "410 Gone": the receiver wants no more
// deliveries, so the endpoint is disabled at once.
func (r attemptResult) gone() bool { return r.err == nil && r.status == http.StatusGone }

// throttled reports a status whose Retry-After is honoured.
func (r attemptResult) throttled() bool {
	switch r.status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusGatewayTimeout:
		return r.err == nil
	}
	return false
}

// nextDelay is how long to wait after `done` failed attempts before the
// next one, or false when the schedule is exhausted. The scheduled delay is
// jittered; a throttling receiver's Retry-After wins when it is later.
func (c Config) nextDelay(done int, r attemptResult, now time.Time) (time.Duration, bool) {
	if done >= len(c.Schedule) {
		return 0, false
	}
	d := c.Schedule[done]
	if c.Jitter > 0 {
		d += time.Duration(float64(d) * c.Jitter * (2*c.Rand() - 1))
	}
	if r.throttled() {
		if ra, ok := parseRetryAfter(r.header.Get("Retry-After"), now); ok && ra > d {
			d = ra
		}
	}
	return max(d, 0), true
}

// parseRetryAfter reads Retry-After as delay-seconds or an HTTP date
// (RFC 9110 §10.2.3), relative to now, capped at maxRetryAfter.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return min(time.Duration(min(secs, int64(maxRetryAfter/time.Second)))*time.Second, maxRetryAfter), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), maxRetryAfter), true
}
